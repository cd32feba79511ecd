#include "engine/chat/jinja_template.h"

#include "engine/chat/jinja_parser.h"

namespace lr::jinja {

namespace {

Status to_status(const TemplateError & e) {
    if (e.kind() == ErrorKind::raised) return error(StatusCode::invalid_argument, e.what());
    const std::string message = e.has_pos() ? format_pos(e.pos()) + ": " + e.what() : std::string(e.what());
    return error(e.kind() == ErrorKind::too_large ? StatusCode::out_of_memory : StatusCode::invalid_argument, message);
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
    try {
        Template t;
        t.body_ = std::make_shared<const Body>(parse_template(source));
        return t;
    } catch (const TemplateError & e) {
        return to_status(e);
    } catch (const std::bad_alloc &) {
        return error(StatusCode::out_of_memory, "out of memory while parsing the template");
    }
}

Result<std::string> Template::render(const Value & context, const RenderOptions & options) const {
    if (!body_) return error(StatusCode::internal, "rendering a template that was never parsed");
    try {
        Interpreter interp(options);
        return interp.render(*body_, context);
    } catch (const TemplateError & e) {
        return to_status(e);
    } catch (const std::bad_alloc &) {
        return error(StatusCode::out_of_memory, "out of memory while rendering the template");
    } catch (const std::length_error &) {
        return error(StatusCode::out_of_memory, "string too long while rendering the template");
    }
}

}  // namespace lr::jinja
