// Tool calls: the format a rendered prompt teaches, parsing replies in Hermes' JSON and
// Qwen3.5's XML (malformed calls stay text), and the real Qwen3, Qwen3.5 and Hermes 3
// templates rendering tools, an assistant's calls and a tool's result.
#include <QtTest>

#include <fstream>
#include <sstream>

#include "engine/chat/chat_template.h"
#include "engine/chat/tool_calls.h"

using namespace lr;
using namespace lr::chat;

namespace {

std::string read_template(const std::string & name) {
    std::ifstream in(std::string(LONGREAD_SHARED_DIR) + "/data/chat-templates/" + name, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const char * const kTools =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"The weather in a city.\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}]";

}  // namespace

class TestToolCalls : public QObject {
    Q_OBJECT

private slots:
    void theFormatComesFromTheRenderedPrompt() {
        QCOMPARE(tool_call_format_of("<tools>...</tools> return <tool_call>{\"name\": ...}</tool_call>"), ToolCallFormat::hermes);
        QCOMPARE(tool_call_format_of("reply <tool_call>\n<function=example>\n<parameter=x>"), ToolCallFormat::qwen_xml);
        QCOMPARE(tool_call_format_of("{\"name\": function name, \"parameters\": ...}"), ToolCallFormat::none);
        QCOMPARE(tool_call_format_of(
                     "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}."),
                 ToolCallFormat::llama3_json);
        QCOMPARE(tool_call_format_name(ToolCallFormat::qwen_xml), std::string_view("qwen-xml"));
        QCOMPARE(tool_call_format_name(ToolCallFormat::none), std::string_view(""));
    }

    void hermesCalls() {
        const ParsedToolCalls p = parse_tool_calls(ToolCallFormat::hermes,
                                                   "Let me look.\n\n<tool_call>\n"
                                                   "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}"
                                                   "\n</tool_call>\n<tool_call>\n"
                                                   "{\"name\": \"get_time\", \"arguments\": \"{\\\"zone\\\": \\\"CET\\\"}\"}"
                                                   "\n</tool_call>\n");
        QCOMPARE(p.content, std::string("Let me look."));
        QCOMPARE(p.calls.size(), size_t(2));
        QCOMPARE(p.calls[0].name, std::string("get_weather"));
        QCOMPARE(p.calls[0].arguments, std::string("{\"city\": \"Paris\", \"days\": 2}"));
        QCOMPARE(p.calls[1].name, std::string("get_time"));
        QCOMPARE(p.calls[1].arguments, std::string("{\"zone\": \"CET\"}"));  // arguments given as JSON text
        // No closing tag at the very end (the model stopped after the call), no arguments.
        const ParsedToolCalls open = parse_tool_calls(ToolCallFormat::hermes, "<tool_call>{\"name\": \"now\"}");
        QCOMPARE(open.content, std::string());
        QCOMPARE(open.calls.size(), size_t(1));
        QCOMPARE(open.calls[0].arguments, std::string("{}"));
    }

    void malformedCallsStayText() {
        for (const char * text : {"<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>",               // bad JSON
                                  "<tool_call>{\"arguments\": {}}</tool_call>",                              // no name
                                  "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",            // not an object
                                  "<tool_call>{\"name\": \"f\"}</tool_call> and then some words",            // text after a call
                                  "<tool_call>{\"name\": \"f\"}</tool_call><tool_call>oops</tool_call>"}) {  // a bad second call
            const ParsedToolCalls p = parse_tool_calls(ToolCallFormat::hermes, text);
            QVERIFY2(p.calls.empty(), text);
            QCOMPARE(p.content, std::string(text));
        }
        QCOMPARE(parse_tool_calls(ToolCallFormat::none, "<tool_call>{\"name\": \"f\"}</tool_call>").calls.size(), size_t(0));
    }

    void llama3Calls() {
        for (const char * text : {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
                                  " <|python_tag|>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"}) {
            const ParsedToolCalls p = parse_tool_calls(ToolCallFormat::llama3_json, text);
            QCOMPARE(p.calls.size(), size_t(1));
            QCOMPARE(p.calls[0].name, std::string("get_weather"));
            QCOMPARE(p.calls[0].arguments, std::string("{\"city\": \"Paris\"}"));
            QCOMPARE(p.content, std::string());
        }
        for (const char * text : {"It is {\"name\": \"x\"}", "{not json}", "{\"city\": \"Paris\"}", "{\"name\": \"f\"} and more"}) {
            const ParsedToolCalls p = parse_tool_calls(ToolCallFormat::llama3_json, text);
            QVERIFY2(p.calls.empty(), text);
            QCOMPARE(p.content, std::string(text));
        }
    }

    void qwenXmlCalls() {
        const ParsedToolCalls p = parse_tool_calls(ToolCallFormat::qwen_xml,
                                                   "I will check.\n<tool_call>\n<function=get_weather>\n"
                                                   "<parameter=city>\nNew York\n</parameter>\n"
                                                   "<parameter=days>\n3\n</parameter>\n"
                                                   "<parameter=note>\nline one\nline two\n</parameter>\n"
                                                   "</function>\n</tool_call>");
        QCOMPARE(p.content, std::string("I will check."));
        QCOMPARE(p.calls.size(), size_t(1));
        QCOMPARE(p.calls[0].name, std::string("get_weather"));
        QCOMPARE(p.calls[0].arguments, std::string("{\"city\": \"New York\", \"days\": 3, \"note\": \"line one\\nline two\"}"));
        for (const char * bad : {"<tool_call>\n<function=f>\n<parameter=x>\n1\n</function>\n</tool_call>",  // unclosed parameter
                                 "<tool_call>\n<parameter=x>\n1\n</parameter>\n</tool_call>",               // no function
                                 "<tool_call>\n<function=>\n</function>\n</tool_call>"}) {                  // no name
            const ParsedToolCalls q = parse_tool_calls(ToolCallFormat::qwen_xml, bad);
            QVERIFY2(q.calls.empty(), bad);
            QCOMPARE(q.content, std::string(bad));
        }
    }

    // The real templates show the tools, an assistant's call and the tool's result, and their
    // prompt names the format parse_tool_calls reads.
    void realTemplatesRenderACallAndItsResult_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("call");
        QTest::newRow("qwen3") << "Qwen-Qwen3-0.6B.jinja" << int(ToolCallFormat::hermes)
                               << "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        QTest::newRow("qwen2.5") << "Qwen-Qwen2.5-7B-Instruct.jinja" << int(ToolCallFormat::hermes) << "\"name\": \"get_weather\"";
        QTest::newRow("hermes3") << "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja" << int(ToolCallFormat::hermes) << "get_weather";
        QTest::newRow("llama3.1") << "meta-llama-Llama-3.1-8B-Instruct.jinja" << int(ToolCallFormat::llama3_json)
                                  << "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
        QTest::newRow("llama3.3") << "meta-llama-Llama-3.3-70B-Instruct.jinja" << int(ToolCallFormat::llama3_json)
                                  << "\"name\": \"get_weather\"";
        QTest::newRow("qwen3.5") << "Qwen3.5-4B.jinja" << int(ToolCallFormat::qwen_xml)
                                 << "<function=get_weather>\n<parameter=city>\nParis";
    }
    void realTemplatesRenderACallAndItsResult() {
        QFETCH(QString, file);
        QFETCH(int, format);
        QFETCH(QString, call);
        Result<ChatTemplate> t = ChatTemplate::parse(read_template(file.toStdString()));
        QVERIFY2(t.ok(), t.ok() ? "" : t.status().message().c_str());
        const ChatRenderOptions options{.add_generation_prompt = true, .tools = kTools};
        const ChatMessage first[] = {{"user", "Weather in Paris?", "", "", ""}};
        const Result<std::string> offered = t->render(first, options);
        QVERIFY2(offered.ok(), offered.ok() ? "" : offered.status().message().c_str());
        QVERIFY2(offered->find("get_weather") != std::string::npos && offered->find("The weather in a city.") != std::string::npos,
                 offered->c_str());
        QCOMPARE(int(tool_call_format_of(*offered)), format);

        const ChatMessage turns[] = {
            {"user", "Weather in Paris?", "", "", ""},
            {"assistant", "", "",
             "[{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}]",
             ""},
            {"tool", "18 C and sunny", "", "", "call_1"},
        };
        const Result<std::string> after = t->render(turns, options);
        QVERIFY2(after.ok(), after.ok() ? "" : after.status().message().c_str());
        QVERIFY2(after->find(call.toStdString()) != std::string::npos, after->c_str());
        QVERIFY2(after->find("18 C and sunny") != std::string::npos, after->c_str());
    }
};

QTEST_APPLESS_MAIN(TestToolCalls)
#include "test_tool_calls.moc"
