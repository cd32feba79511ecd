// One reply on its way to the client: with tools offered, the text before a call streams as
// content (a partial "<tool_call>" waits), the call is parsed at the end and finishes the
// reply as "tool_calls", a malformed call is sent as text, and without tools nothing is held.
#include <QtTest>

#include "app/server/reply_stream.h"

using namespace lr;
using namespace lr::server;

namespace {

struct Reply {
    std::string content;
    std::vector<chat::ToolCall> calls;
    std::string finish_reason;
    size_t content_events = 0;
};

// Feeds `pieces` through a ReplyStream and collects what its job receives.
Reply stream(chat::ToolCallFormat tools, const std::vector<std::string> & pieces, std::vector<std::string> stop = {}) {
    Job job;
    job.request.stop = std::move(stop);
    ServerMetrics metrics;
    ReplyStream s(job, metrics, tools);
    for (const std::string & p : pieces) {
        if (!s.answer(p)) break;
    }
    s.finish(GenerateResult{.tokens = std::vector<int32_t>(pieces.size(), 1)}, 10);
    Reply r;
    for (;;) {
        const std::optional<JobEvent> e = job.channel.next(std::chrono::milliseconds(0));
        if (!e) break;
        if (e->kind == JobEvent::Kind::answer) {
            r.content += e->text;
            ++r.content_events;
        }
        if (e->kind == JobEvent::Kind::tool_calls) r.calls = e->tool_calls;
        if (e->kind == JobEvent::Kind::finished) r.finish_reason = e->finish_reason;
    }
    return r;
}

}  // namespace

class TestReplyStream : public QObject {
    Q_OBJECT

private slots:
    void aCallIsKeptBackAndParsed() {
        const Reply r = stream(chat::ToolCallFormat::hermes, {"Let me check", ".\n<tool", "_call>\n{\"name\": \"get_",
                                                              "weather\", \"arguments\": ", "{\"city\": \"Paris\"}}\n</tool_call>"});
        QCOMPARE(r.content, std::string("Let me check.\n"));
        QCOMPARE(r.calls.size(), size_t(1));
        QCOMPARE(r.calls[0].name, std::string("get_weather"));
        QCOMPARE(r.calls[0].arguments, std::string("{\"city\": \"Paris\"}"));
        QCOMPARE(r.finish_reason, std::string("tool_calls"));
    }

    void textThatOnlyLooksLikeAMarkerIsSent() {
        const Reply r = stream(chat::ToolCallFormat::hermes, {"a <tool", "box> and <to"});
        QCOMPARE(r.content, std::string("a <toolbox> and <to"));  // the held "<to" at the end, too
        QVERIFY(r.calls.empty());
        QCOMPARE(r.finish_reason, std::string("length"));
    }

    void aMalformedCallIsText() {
        const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {oops}\n</tool_call>";
        const Reply r = stream(chat::ToolCallFormat::hermes, {text.substr(0, 15), text.substr(15)});
        QCOMPARE(r.content, text);
        QVERIFY(r.calls.empty());
        QCOMPARE(r.finish_reason, std::string("length"));
    }

    void withoutToolsNothingIsHeld() {
        const Reply r = stream(chat::ToolCallFormat::none, {"x <tool_call>", "{\"name\": \"f\"}</tool_call>"});
        QCOMPARE(r.content, std::string("x <tool_call>{\"name\": \"f\"}</tool_call>"));
        QCOMPARE(r.content_events, size_t(2));  // streamed as it came
        QVERIFY(r.calls.empty());
    }

    // Llama 3: a reply that opens with "{" (or the python tag) is kept whole and read as one
    // call; any other reply streams as it comes.
    void llama3RepliesThatOpenWithABrace() {
        const Reply call = stream(chat::ToolCallFormat::llama3_json, {" \n", "{\"name\": \"f\", ", "\"parameters\": {\"x\": 1}}"});
        QCOMPARE(call.calls.size(), size_t(1));
        QCOMPARE(call.calls[0].arguments, std::string("{\"x\": 1}"));
        QCOMPARE(call.content, std::string());
        QCOMPARE(call.finish_reason, std::string("tool_calls"));
        const Reply tagged = stream(chat::ToolCallFormat::llama3_json, {"<|python", "_tag|>{\"name\": \"f\"}"});
        QCOMPARE(tagged.calls.size(), size_t(1));
        const Reply text = stream(chat::ToolCallFormat::llama3_json, {"Hello", " {there}", " <b>"});
        QCOMPARE(text.content, std::string("Hello {there} <b>"));
        QCOMPARE(text.content_events, size_t(3));  // streamed, nothing held
        QVERIFY(text.calls.empty());
        const Reply html = stream(chat::ToolCallFormat::llama3_json, {"<", "b>bold</b>"});
        QCOMPARE(html.content, std::string("<b>bold</b>"));
        const Reply broken = stream(chat::ToolCallFormat::llama3_json, {"{\"name\": ", "oops"});
        QCOMPARE(broken.content, std::string("{\"name\": oops"));  // not a call: the text, at the end
        QVERIFY(broken.calls.empty());
    }

    void aStopStringBeforeTheCallEndsTheReply() {
        const Reply r = stream(chat::ToolCallFormat::hermes, {"Done. END", " <tool_call>{\"name\": \"f\"}</tool_call>"}, {"END"});
        QCOMPARE(r.content, std::string("Done. "));
        QVERIFY(r.calls.empty());
        QCOMPARE(r.finish_reason, std::string("stop"));
    }
};

QTEST_APPLESS_MAIN(TestReplyStream)
#include "test_reply_stream.moc"
