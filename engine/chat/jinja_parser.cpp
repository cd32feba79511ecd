#include "engine/chat/jinja_parser.h"

#include <algorithm>
#include <initializer_list>
#include <type_traits>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_lexer.h"

namespace lr::jinja {

namespace {

constexpr int k_max_nesting = 100;
constexpr uint32_t k_max_expr_height = 200;

std::string describe(const Token & t) {
    switch (t.kind) {
        case TokenKind::text: return "template text";
        case TokenKind::variable_begin: return "'{{'";
        case TokenKind::variable_end: return "'}}'";
        case TokenKind::block_begin: return "'{%'";
        case TokenKind::block_end: return "'%}'";
        case TokenKind::eof: return "end of template";
        case TokenKind::string: return "string literal";
        default: return "'" + t.value + "'";
    }
}

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

    Body parse() {
        Body body = subparse({});
        if (peek().kind != TokenKind::eof) error(peek(), "unexpected " + describe(peek()));
        return body;
    }

private:
    // ---- token stream -------------------------------------------------------------------

    const Token & peek(size_t ahead = 0) const { return toks_[std::min(i_ + ahead, toks_.size() - 1)]; }
    const Token & next() {
        const Token & t = toks_[i_];
        if (i_ + 1 < toks_.size()) ++i_;
        return t;
    }
    bool at_op(std::string_view op, size_t ahead = 0) const { return peek(ahead).kind == TokenKind::op && peek(ahead).value == op; }
    bool at_name(std::string_view name, size_t ahead = 0) const { return peek(ahead).kind == TokenKind::name && peek(ahead).value == name; }
    bool accept_op(std::string_view op) {
        if (!at_op(op)) return false;
        next();
        return true;
    }
    bool accept_name(std::string_view name) {
        if (!at_name(name)) return false;
        next();
        return true;
    }

    [[noreturn]] void error(const Token & at, const std::string & what) const { throw TemplateError(ErrorKind::syntax, at.pos, what); }

    void expect_op(std::string_view op) {
        if (!accept_op(op)) error(peek(), "expected '" + std::string(op) + "', got " + describe(peek()));
    }
    void expect_kind(TokenKind kind, std::string_view what) {
        if (peek().kind != kind) error(peek(), "expected " + std::string(what) + ", got " + describe(peek()));
        next();
    }
    void expect_block_end() { expect_kind(TokenKind::block_end, "'%}'"); }
    std::string expect_name() {
        if (peek().kind != TokenKind::name) error(peek(), "expected a name, got " + describe(peek()));
        return next().value;
    }

    struct DepthGuard {
        DepthGuard(Parser & p, const Token & at) : p_(p) {
            if (++p_.depth_ > k_max_nesting) p_.error(at, "template nested too deeply (over 100 levels)");
        }
        ~DepthGuard() { --p_.depth_; }
        DepthGuard(const DepthGuard &) = delete;
        DepthGuard & operator=(const DepthGuard &) = delete;
        Parser & p_;
    };

    // Every expression node is built here, so its height is known and capped: evaluating
    // and destroying the tree recurse once per level.
    template <class T>
    ExprPtr make(SourcePos pos, T node) {
        auto e = std::make_unique<Expr>();
        e->pos = pos;
        e->node = std::move(node);
        e->height = height_of(*e);
        if (e->height > k_max_expr_height) {
            throw TemplateError(ErrorKind::syntax, pos, "expression too long or nested too deeply");
        }
        return e;
    }

    static uint32_t height_of(const Expr & e) {
        uint32_t h = 0;
        auto take = [&h](const ExprPtr & child) {
            if (child) h = std::max(h, child->height);
        };
        auto take_args = [&take](const std::vector<ExprPtr> & args) {
            for (const ExprPtr & a : args) take(a);
        };
        auto take_kwargs = [&take](const std::vector<Keyword> & kwargs) {
            for (const Keyword & k : kwargs) take(k.value);
        };
        std::visit(
            [&](const auto & n) {
                using T = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<T, ListExpr>) {
                    take_args(n.items);
                } else if constexpr (std::is_same_v<T, DictExpr>) {
                    for (const auto & [k, v] : n.items) {
                        take(k);
                        take(v);
                    }
                } else if constexpr (std::is_same_v<T, GetAttrExpr>) {
                    take(n.object);
                } else if constexpr (std::is_same_v<T, GetItemExpr>) {
                    take(n.object);
                    take(n.index);
                } else if constexpr (std::is_same_v<T, SliceExpr>) {
                    take(n.object);
                    take(n.start);
                    take(n.stop);
                    take(n.step);
                } else if constexpr (std::is_same_v<T, CallExpr>) {
                    take(n.callee);
                    take_args(n.args);
                    take_kwargs(n.kwargs);
                } else if constexpr (std::is_same_v<T, FilterExpr>) {
                    take(n.operand);
                    take_args(n.args);
                    take_kwargs(n.kwargs);
                } else if constexpr (std::is_same_v<T, TestExpr>) {
                    take(n.operand);
                    take_args(n.args);
                } else if constexpr (std::is_same_v<T, UnaryExpr>) {
                    take(n.operand);
                } else if constexpr (std::is_same_v<T, BinaryExpr>) {
                    take(n.left);
                    take(n.right);
                } else if constexpr (std::is_same_v<T, CompareExpr>) {
                    take(n.first);
                    for (const auto & r : n.rest) take(r.second);
                } else if constexpr (std::is_same_v<T, ConditionalExpr>) {
                    take(n.then_value);
                    take(n.condition);
                    take(n.else_value);
                }
            },
            e.node);
        return h + 1;
    }
    template <class T>
    static StmtPtr make_stmt(SourcePos pos, T node) {
        auto s = std::make_unique<Stmt>();
        s->pos = pos;
        s->node = std::move(node);
        return s;
    }

    // ---- statements ---------------------------------------------------------------------

    // Parses until `{% <one of end_tags>`; leaves the stream at that tag's name.
    Body subparse(std::initializer_list<std::string_view> end_tags) {
        Body body;
        while (true) {
            const Token & t = peek();
            switch (t.kind) {
                case TokenKind::text: body.push_back(make_stmt(t.pos, TextStmt{next().value})); break;
                case TokenKind::variable_begin: {
                    const SourcePos pos = next().pos;
                    ExprPtr e = parse_tuple(true, false);
                    expect_kind(TokenKind::variable_end, "'}}'");
                    body.push_back(make_stmt(pos, OutputStmt{std::move(e)}));
                    break;
                }
                case TokenKind::block_begin: {
                    next();
                    const Token & name = peek();
                    if (name.kind == TokenKind::name && std::find(end_tags.begin(), end_tags.end(), name.value) != end_tags.end()) {
                        return body;
                    }
                    parse_statement(body);
                    break;
                }
                case TokenKind::eof:
                    if (end_tags.size() != 0) {
                        std::string expected;
                        for (std::string_view e : end_tags) expected += (expected.empty() ? "'" : " or '") + std::string(e) + "'";
                        error(t, "unexpected end of template, expected " + expected);
                    }
                    return body;
                default: error(t, "unexpected " + describe(t));
            }
        }
    }

    void parse_statement(Body & body) {
        const Token & t = peek();
        if (t.kind != TokenKind::name) error(t, "expected a statement name, got " + describe(t));
        DepthGuard guard(*this, t);
        const SourcePos pos = t.pos;
        const std::string keyword = next().value;
        if (keyword == "if") {
            body.push_back(make_stmt(pos, parse_if()));
        } else if (keyword == "for") {
            body.push_back(make_stmt(pos, parse_for()));
        } else if (keyword == "set") {
            body.push_back(parse_set(pos));
        } else if (keyword == "macro") {
            body.push_back(make_stmt(pos, parse_macro()));
        } else if (keyword == "filter") {
            FilterBlockStmt f;
            f.filters = parse_filter_chain(false);
            expect_block_end();
            f.body = subparse({"endfilter"});
            end_tag("endfilter");
            body.push_back(make_stmt(pos, std::move(f)));
        } else if (keyword == "break" || keyword == "continue") {
            if (loop_depth_ == 0) error(t, "'" + keyword + "' outside of a loop");
            expect_block_end();
            body.push_back(make_stmt(pos, LoopControlStmt{keyword == "break"}));
        } else if (keyword == "generation") {
            // Hugging Face's assistant-mask marker: renders its body unchanged.
            expect_block_end();
            Body inner = subparse({"endgeneration"});
            end_tag("endgeneration");
            for (StmtPtr & s : inner) body.push_back(std::move(s));
        } else if (keyword == "extends" || keyword == "include" || keyword == "import" || keyword == "from" || keyword == "block" ||
                   keyword == "call" || keyword == "with" || keyword == "do" || keyword == "autoescape") {
            error(t, "unsupported tag '" + keyword + "'");
        } else {
            error(t, "unknown tag '" + keyword + "'");
        }
    }

    void end_tag(std::string_view name) {
        if (!accept_name(name)) error(peek(), "expected '" + std::string(name) + "'");
        expect_block_end();
    }

    IfStmt parse_if() {
        IfStmt s;
        while (true) {
            ExprPtr cond = parse_tuple(true, false);
            expect_block_end();
            Body body = subparse({"elif", "else", "endif"});
            s.branches.emplace_back(std::move(cond), std::move(body));
            const std::string tag = next().value;
            if (tag == "elif") continue;
            if (tag == "else") {
                expect_block_end();
                s.else_body = subparse({"endif"});
                next();
            }
            expect_block_end();
            return s;
        }
    }

    ForStmt parse_for() {
        ForStmt s;
        s.target = parse_target(false);
        if (!accept_name("in")) error(peek(), "expected 'in', got " + describe(peek()));
        s.iterable = parse_tuple(false, false);
        if (accept_name("if")) s.filter = parse_expression(true);
        if (at_name("recursive")) error(peek(), "recursive loops are not supported");
        expect_block_end();
        ++loop_depth_;
        s.body = subparse({"endfor", "else"});
        --loop_depth_;
        if (next().value == "else") {
            expect_block_end();
            s.else_body = subparse({"endfor"});
            next();
        }
        expect_block_end();
        return s;
    }

    // `name`, `a, b`, `(a, b)`, or with `allow_attribute` `ns.attr`.
    Target parse_target(bool allow_attribute) {
        Target target;
        const bool paren = accept_op("(");
        target.names.push_back(expect_name());
        if (allow_attribute && !paren && accept_op(".")) {
            target.ns_attribute = expect_name();
            return target;
        }
        while (accept_op(",")) {
            if (paren && at_op(")")) break;
            target.names.push_back(expect_name());
        }
        if (paren) expect_op(")");
        return target;
    }

    StmtPtr parse_set(SourcePos pos) {
        Target target = parse_target(true);
        if (accept_op("=")) {
            ExprPtr value = parse_tuple(true, false);
            expect_block_end();
            return make_stmt(pos, SetStmt{std::move(target), std::move(value)});
        }
        SetBlockStmt s;
        s.target = std::move(target);
        if (at_op("|")) s.filters = parse_filter_chain(true);
        expect_block_end();
        s.body = subparse({"endset"});
        end_tag("endset");
        return make_stmt(pos, std::move(s));
    }

    MacroStmt parse_macro() {
        MacroStmt m;
        m.name = expect_name();
        expect_op("(");
        while (!at_op(")")) {
            if (!m.params.empty()) expect_op(",");
            if (at_op(")")) break;
            MacroParam p;
            p.name = expect_name();
            if (accept_op("=")) p.default_value = parse_expression(true);
            m.params.push_back(std::move(p));
        }
        expect_op(")");
        expect_block_end();
        const int saved_loop_depth = loop_depth_;
        loop_depth_ = 0;
        m.body = subparse({"endmacro"});
        loop_depth_ = saved_loop_depth;
        next();
        if (peek().kind == TokenKind::name) next();  // {% endmacro name %}
        expect_block_end();
        return m;
    }

    // `name(args) | name ...` after {% filter or {% set x |.
    std::vector<FilterCall> parse_filter_chain(bool leading_pipe) {
        std::vector<FilterCall> filters;
        if (leading_pipe) expect_op("|");
        do {
            FilterCall f;
            f.pos = peek().pos;
            f.name = filter_name();
            if (at_op("(")) parse_call_args(f.args, f.kwargs);
            filters.push_back(std::move(f));
        } while (accept_op("|"));
        return filters;
    }

    std::string filter_name() {
        const Token & t = peek();
        std::string name = expect_name();
        if (find_filter(name) == nullptr) error(t, "no filter named '" + name + "'");
        return name;
    }

    // ---- expressions --------------------------------------------------------------------

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this, peek());
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    // A single expression, or `a, b` (a tuple, as a list). `explicit_parens` allows `()`.
    ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens) {
        const SourcePos pos = peek().pos;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            const Token & t = peek();
            if (t.kind == TokenKind::variable_end || t.kind == TokenKind::block_end || at_op(")")) break;
            items.push_back(parse_expression(with_condexpr));
            if (at_op(",")) {
                is_tuple = true;
            } else {
                break;
            }
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parens) error(peek(), "expected an expression, got " + describe(peek()));
        }
        return make(pos, ListExpr{std::move(items)});
    }

    ExprPtr parse_condexpr() {
        ExprPtr expr = parse_or();
        while (at_name("if")) {
            const SourcePos pos = next().pos;
            ExprPtr cond = parse_or();
            ExprPtr otherwise;
            if (accept_name("else")) {
                DepthGuard guard(*this, peek());
                otherwise = parse_condexpr();
            }
            expr = make(pos, ConditionalExpr{std::move(expr), std::move(cond), std::move(otherwise)});
        }
        return expr;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (at_name("or")) {
            const SourcePos pos = next().pos;
            left = make(pos, BinaryExpr{BinaryOp::logical_or, std::move(left), parse_and()});
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (at_name("and")) {
            const SourcePos pos = next().pos;
            left = make(pos, BinaryExpr{BinaryOp::logical_and, std::move(left), parse_not()});
        }
        return left;
    }

    ExprPtr parse_not() {
        if (at_name("not")) {
            DepthGuard guard(*this, peek());
            const SourcePos pos = next().pos;
            return make(pos, UnaryExpr{UnaryOp::logical_not, parse_not()});
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const SourcePos pos = peek().pos;
        ExprPtr first = parse_math1();
        CompareExpr cmp;
        while (true) {
            CompareOp op;
            if (at_op("==")) op = CompareOp::eq;
            else if (at_op("!=")) op = CompareOp::ne;
            else if (at_op("<")) op = CompareOp::lt;
            else if (at_op("<=")) op = CompareOp::le;
            else if (at_op(">")) op = CompareOp::gt;
            else if (at_op(">=")) op = CompareOp::ge;
            else if (at_name("in")) op = CompareOp::in;
            else if (at_name("not") && at_name("in", 1)) {
                next();
                op = CompareOp::not_in;
            } else {
                break;
            }
            next();
            cmp.rest.emplace_back(op, parse_math1());
        }
        if (cmp.rest.empty()) return first;
        cmp.first = std::move(first);
        return make(pos, std::move(cmp));
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (at_op("+") || at_op("-")) {
            const Token & t = next();
            const BinaryOp op = t.value == "+" ? BinaryOp::add : BinaryOp::sub;
            left = make(t.pos, BinaryExpr{op, std::move(left), parse_concat()});
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (at_op("~")) {
            const SourcePos pos = next().pos;
            left = make(pos, BinaryExpr{BinaryOp::concat, std::move(left), parse_math2()});
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
            const Token & t = next();
            const BinaryOp op = t.value == "*"    ? BinaryOp::mul
                                : t.value == "/"  ? BinaryOp::div
                                : t.value == "//" ? BinaryOp::floordiv
                                                  : BinaryOp::mod;
            left = make(t.pos, BinaryExpr{op, std::move(left), parse_pow()});
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (at_op("**")) {
            const SourcePos pos = next().pos;
            left = make(pos, BinaryExpr{BinaryOp::pow, std::move(left), parse_unary(true)});
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this, peek());
        ExprPtr node;
        if (at_op("-") || at_op("+")) {
            const Token & t = next();
            node = make(t.pos, UnaryExpr{t.value == "-" ? UnaryOp::neg : UnaryOp::pos, parse_unary(false)});
        } else {
            node = parse_postfix(parse_primary());
        }
        return with_filter ? parse_filter_expr(std::move(node)) : std::move(node);
    }

    ExprPtr parse_primary() {
        const Token & t = peek();
        const SourcePos pos = t.pos;
        switch (t.kind) {
            case TokenKind::name: {
                const std::string & n = next().value;
                if (n == "true" || n == "True") return make(pos, LiteralExpr{Value(true)});
                if (n == "false" || n == "False") return make(pos, LiteralExpr{Value(false)});
                if (n == "none" || n == "None") return make(pos, LiteralExpr{Value::none()});
                return make(pos, NameExpr{n});
            }
            case TokenKind::string: {
                std::string s = next().value;
                while (peek().kind == TokenKind::string) s += next().value;  // "a" "b" == "ab"
                return make(pos, LiteralExpr{Value(std::move(s))});
            }
            case TokenKind::integer: return make(pos, LiteralExpr{Value(next().int_value)});
            case TokenKind::floating: return make(pos, LiteralExpr{Value(next().float_value)});
            case TokenKind::op:
                if (accept_op("(")) {
                    ExprPtr e = parse_tuple(true, true);
                    expect_op(")");
                    return e;
                }
                if (accept_op("[")) {
                    ListExpr list;
                    while (!at_op("]")) {
                        if (!list.items.empty()) expect_op(",");
                        if (at_op("]")) break;
                        list.items.push_back(parse_expression(true));
                    }
                    expect_op("]");
                    return make(pos, std::move(list));
                }
                if (accept_op("{")) {
                    DictExpr dict;
                    while (!at_op("}")) {
                        if (!dict.items.empty()) expect_op(",");
                        if (at_op("}")) break;
                        ExprPtr key = parse_expression(true);
                        expect_op(":");
                        dict.items.emplace_back(std::move(key), parse_expression(true));
                    }
                    expect_op("}");
                    return make(pos, std::move(dict));
                }
                break;
            default: break;
        }
        error(t, "unexpected " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (at_op(".")) {
                const SourcePos pos = next().pos;
                const Token & t = peek();
                if (t.kind == TokenKind::integer) {
                    // a.0 is a[0]
                    node = make(pos, GetItemExpr{std::move(node), make(t.pos, LiteralExpr{Value(next().int_value)})});
                } else {
                    node = make(pos, GetAttrExpr{std::move(node), expect_name()});
                }
            } else if (at_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (at_op("|")) {
                const SourcePos pos = next().pos;
                FilterExpr f;
                f.name = filter_name();
                if (at_op("(")) parse_call_args(f.args, f.kwargs);
                f.operand = std::move(node);
                node = make(pos, std::move(f));
            } else if (at_name("is")) {
                const SourcePos pos = next().pos;
                TestExpr test;
                test.negated = accept_name("not");
                const Token & name = peek();
                test.name = expect_name();
                if (find_test(test.name) == nullptr) error(name, "no test named '" + test.name + "'");
                if (at_op("(")) {
                    std::vector<Keyword> kwargs;
                    parse_call_args(test.args, kwargs);
                    if (!kwargs.empty()) error(peek(), "tests take no keyword arguments");
                } else {
                    const Token & t = peek();
                    const bool starts_expr = t.kind == TokenKind::name || t.kind == TokenKind::string || t.kind == TokenKind::integer ||
                                             t.kind == TokenKind::floating || at_op("[") || at_op("{");
                    if (starts_expr && !at_name("else") && !at_name("or") && !at_name("and") && !at_name("if") && !at_name("in") &&
                        !at_name("not")) {
                        if (at_name("is")) error(t, "cannot chain multiple tests with 'is'");
                        test.args.push_back(parse_postfix(parse_primary()));
                    }
                }
                test.operand = std::move(node);
                node = make(pos, std::move(test));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr object) {
        const SourcePos pos = next().pos;  // [
        ExprPtr start;
        if (!at_op(":")) {
            start = parse_expression(true);
            if (accept_op("]")) return make(pos, GetItemExpr{std::move(object), std::move(start)});
        }
        SliceExpr slice;
        slice.object = std::move(object);
        slice.start = std::move(start);
        expect_op(":");
        if (!at_op("]") && !at_op(":")) slice.stop = parse_expression(true);
        if (accept_op(":") && !at_op("]")) slice.step = parse_expression(true);
        expect_op("]");
        return make(pos, std::move(slice));
    }

    ExprPtr parse_call(ExprPtr callee) {
        const SourcePos pos = peek().pos;
        CallExpr call;
        call.callee = std::move(callee);
        parse_call_args(call.args, call.kwargs);
        return make(pos, std::move(call));
    }

    void parse_call_args(std::vector<ExprPtr> & args, std::vector<Keyword> & kwargs) {
        expect_op("(");
        bool first = true;
        while (!at_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (at_op(")")) break;
            if (at_op("*") || at_op("**")) error(peek(), "*args and **kwargs are not supported");
            if (peek().kind == TokenKind::name && at_op("=", 1)) {
                std::string name = next().value;
                next();
                kwargs.push_back(Keyword{std::move(name), parse_expression(true)});
            } else {
                if (!kwargs.empty()) error(peek(), "positional argument follows keyword argument");
                args.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    std::vector<Token> toks_;
    size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse(); }

}  // namespace lr::jinja
