// The chat templates of the 2025-2026 families (Qwen3, Qwen3-Coder, Qwen3.5, Gemma 3 and 4,
// gpt-oss, Mistral Small 3.2 / Ministral 3, Phi-3) rendered by the Jinja interpreter, their
// builtin fallbacks, and the fallback chosen from a model's architecture.
//
// The expected strings were worked out by reading each template with Hugging Face's
// settings in mind (trim_blocks, lstrip_blocks, keep_trailing_newline off; tools undefined).
// Those of Qwen3.5 and Gemma 4 were also checked against jinja2 3.1.6 set up as
// transformers' apply_chat_template sets it up (its tojson, raise_exception, loopcontrols).

#include <QtTest>

#include <string>
#include <vector>

#include "chat/chat_conversations.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_json.h"
#include "engine/chat/jinja_template.h"
#include "engine/gguf/gguf_file.h"

Q_DECLARE_METATYPE(lr::chat::ChatFamily)

using namespace lr;
using namespace lr::chat;
using namespace lr::test;

// Template variables a row sets.
struct Vars {
    std::optional<bool> enable_thinking;
    std::string reasoning_effort;
};
Q_DECLARE_METATYPE(Vars)

namespace {

// The template a vocabulary file carries (Gemma 3's and Phi-3's are not in chat-templates).
std::string template_of_vocab(const QString & vocab) {
    const auto file = gguf::GgufFile::open(std::string(LONGREAD_SHARED_DIR) + "/data/tokenizer/" + vocab.toStdString());
    if (!file.ok()) return {};
    const auto source = file->get_string("tokenizer.chat_template");
    return source.ok() && *source ? std::string(**source) : std::string();
}

std::string source_of(const QString & name) { return name.startsWith("vocab:") ? template_of_vocab(name.mid(6)) : read_template(name); }

std::tm fixed_date() {
    std::tm t{};
    t.tm_year = 2025 - 1900;
    t.tm_mon = 7;
    t.tm_mday = 5;
    t.tm_wday = 2;
    return t;
}

ChatRenderOptions options(bool generation_prompt, const Vars & vars = {}) {
    return ChatRenderOptions{.add_generation_prompt = generation_prompt,
                             .bos_token = "<s>",
                             .eos_token = "</s>",
                             .enable_thinking = vars.enable_thinking,
                             .reasoning_effort = vars.reasoning_effort,
                             .local_time = fixed_date};
}

const QString k_chatml_full =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nHello!<|im_end|>\n"
    "<|im_start|>assistant\nHi there.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?\n<|im_end|>\n"
    "<|im_start|>assistant\n";

const QString k_chatml_no_system =
    "<|im_start|>user\nHello!<|im_end|>\n"
    "<|im_start|>assistant\nHi there.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?\n<|im_end|>\n"
    "<|im_start|>assistant\n";

const QString k_harmony_system =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n"
    "Current date: 2025-08-05\n\n"
    "Reasoning: {EFFORT}\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";

QString harmony_system(const QString & effort = "medium") { return QString(k_harmony_system).replace("{EFFORT}", effort); }

const QString k_mistral3_full =
    "<s>[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT][INST]Hello![/INST]Hi there.</s>[INST]What is 2+2?\n[/INST]";

const QString k_ministral3_default_system =
    "[SYSTEM_PROMPT]# HOW YOU SHOULD THINK AND ANSWER\n\n"
    "First draft your thinking process (inner monologue) until you arrive at a response. Format your response using "
    "Markdown, and use LaTeX for any mathematical equations. Write both your thoughts and the response in the same "
    "language as the input.\n\n"
    "Your thinking process must follow the template below:[THINK]Your thoughts or/and draft, like working through an "
    "exercise on scratch paper. Be as casual and as long as you want until you are confident to generate the response "
    "to the user.[/THINK]Here, provide a self-contained response.[/SYSTEM_PROMPT]";

const QString k_gemma3_full =
    "<s><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n"
    "<start_of_turn>model\nHi there.<end_of_turn>\n"
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
    "<start_of_turn>model\n";

const QString k_gemma4_turns =
    "<|turn>user\nHello!<turn|>\n"
    "<|turn>model\nHi there.<turn|>\n"
    "<|turn>user\nWhat is 2+2?<turn|>\n"
    "<|turn>model\n";

}  // namespace

class TestChatFamilies : public QObject {
    Q_OBJECT
private slots:
    void templates_data() {
        QTest::addColumn<QString>("file");  // "vocab:NAME" for a vocabulary's own template
        QTest::addColumn<QString>("conv");
        QTest::addColumn<bool>("generation_prompt");
        QTest::addColumn<Vars>("vars");
        QTest::addColumn<QString>("expected");

        const char * qwen3 = "Qwen-Qwen3-0.6B.jinja";
        QTest::newRow("qwen3/full") << qwen3 << "full" << true << Vars{} << k_chatml_full;
        QTest::newRow("qwen3/full/thinking on") << qwen3 << "full" << true << Vars{.enable_thinking = true} << k_chatml_full;
        QTest::newRow("qwen3/full/thinking off")
            << qwen3 << "full" << true << Vars{.enable_thinking = false} << k_chatml_full + "<think>\n\n</think>\n\n";
        QTest::newRow("qwen3/user") << qwen3 << "user" << true << Vars{} << "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n";
        // Earlier replies lose their thinking, kept in the text or apart.
        QTest::newRow("qwen3/think in text") << qwen3 << "think_in_text" << true << Vars{} << k_chatml_no_system;
        QTest::newRow("qwen3/think apart") << qwen3 << "think_apart" << true << Vars{} << k_chatml_no_system;
        // The reply after the last question keeps it.
        QTest::newRow("qwen3/reply") << qwen3 << "reply" << false << Vars{}
                                     << "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                                        "<|im_start|>assistant\n<think>\nAdd.\n</think>\n\n4.<|im_end|>\n";

        QTest::newRow("qwen3-coder/full") << "Qwen3-Coder.jinja"
                                          << "full" << true << Vars{} << k_chatml_full;
        QTest::newRow("qwen3-coder/user") << "Qwen3-Coder.jinja"
                                          << "user" << true << Vars{} << "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n";

        const char * qwen35 = "Qwen3.5-4B.jinja";
        const QString qwen35_turns =
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\nHi there.<|im_end|>\n"
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n";
        const QString qwen35_full = qwen35_turns + "<|im_start|>assistant\n";
        QTest::newRow("qwen3.5/full") << qwen35 << "full" << true << Vars{} << qwen35_full + "<think>\n";
        QTest::newRow("qwen3.5/full/thinking off")
            << qwen35 << "full" << true << Vars{.enable_thinking = false} << qwen35_full + "<think>\n\n</think>\n\n";
        QTest::newRow("qwen3.5/reply") << qwen35 << "reply" << false << Vars{}
                                       << "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                                          "<|im_start|>assistant\n<think>\nAdd.\n</think>\n\n4.<|im_end|>\n";
        QTest::newRow("qwen3.5/full/thinking on") << qwen35 << "full" << true << Vars{.enable_thinking = true} << qwen35_full + "<think>\n";
        QTest::newRow("qwen3.5/full/no-prompt") << qwen35 << "full" << false << Vars{} << qwen35_turns;
        QTest::newRow("qwen3.5/user") << qwen35 << "user" << true << Vars{}
                                      << "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n";
        // Earlier replies lose their thinking, kept in the text or apart; contents are trimmed.
        const QString qwen35_no_system =
            "<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\nHi there.<|im_end|>\n"
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n";
        QTest::newRow("qwen3.5/think in text") << qwen35 << "think_in_text" << true << Vars{} << qwen35_no_system;
        QTest::newRow("qwen3.5/think apart") << qwen35 << "think_apart" << true << Vars{} << qwen35_no_system;
        // Unlike Qwen3, every reply after the last question has a think block, an empty one too.
        QTest::newRow("qwen3.5/two replies") << qwen35 << "two_replies" << false << Vars{}
                                             << "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                                                "<|im_start|>assistant\n<think>\n\n</think>\n\nLet me see.<|im_end|>\n"
                                                "<|im_start|>assistant\n<think>\nAdd.\n</think>\n\n4.<|im_end|>\n";
        QTest::newRow("qwen3/two replies") << qwen3 << "two_replies" << false << Vars{}
                                           << "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                                              "<|im_start|>assistant\nLet me see.<|im_end|>\n"
                                              "<|im_start|>assistant\n<think>\nAdd.\n</think>\n\n4.<|im_end|>\n";

        const char * oss = "openai-gpt-oss-120b.jinja";
        QTest::newRow("gpt-oss/full") << oss << "full" << true << Vars{}
                                      << harmony_system() +
                                             "<|start|>developer<|message|># Instructions\n\nYou are a helpful assistant.\n\n<|end|>"
                                             "<|start|>user<|message|>Hello!<|end|>"
                                             "<|start|>assistant<|channel|>final<|message|>Hi there.<|end|>"
                                             "<|start|>user<|message|>What is 2+2?\n<|end|>"
                                             "<|start|>assistant";
        QTest::newRow("gpt-oss/user/high") << oss << "user" << true << Vars{.reasoning_effort = "high"}
                                           << harmony_system("high") + "<|start|>user<|message|>Hello!<|end|><|start|>assistant";
        QTest::newRow("gpt-oss/user/no-prompt")
            << oss << "user" << false << Vars{} << harmony_system() + "<|start|>user<|message|>Hello!<|end|>";
        // Thinking of earlier turns is dropped; the reply being trained on keeps it.
        QTest::newRow("gpt-oss/think apart") << oss << "think_apart" << true << Vars{.reasoning_effort = "low"}
                                             << harmony_system("low") +
                                                    "<|start|>user<|message|>Hello!<|end|>"
                                                    "<|start|>assistant<|channel|>final<|message|>Hi there.<|end|>"
                                                    "<|start|>user<|message|>What is 2+2?\n<|end|>"
                                                    "<|start|>assistant";
        QTest::newRow("gpt-oss/reply") << oss << "reply" << false << Vars{}
                                       << harmony_system() +
                                              "<|start|>user<|message|>What is 2+2?<|end|>"
                                              "<|start|>assistant<|channel|>analysis<|message|>Add.<|end|>"
                                              "<|start|>assistant<|channel|>final<|message|>4.<|return|>";

        const char * ministral = "mistralai-Ministral-3-14B-Reasoning-2512.jinja";
        QTest::newRow("ministral-3/full") << ministral << "full" << true << Vars{} << k_mistral3_full;
        QTest::newRow("ministral-3/user") << ministral << "user" << true << Vars{}
                                          << "<s>" + k_ministral3_default_system + "[INST]Hello![/INST]";
        QTest::newRow("mistral-small-3.2/full") << "Mistral-Small-3.2-24B-Instruct-2506.jinja"
                                                << "full" << true << Vars{} << k_mistral3_full;

        QTest::newRow("phi-3.5/full") << "microsoft-Phi-3.5-mini-instruct.jinja"
                                      << "full" << true << Vars{}
                                      << "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n"
                                         "<|assistant|>\nHi there.<|end|>\n<|user|>\nWhat is 2+2?\n<|end|>\n<|assistant|>\n";
        // Phi-3 mini's own template has no system role and always opens the reply.
        QTest::newRow("phi-3/full") << "vocab:ggml-vocab-phi-3.gguf"
                                    << "full" << true << Vars{}
                                    << "<s><|user|>\nHello!<|end|>\n<|assistant|>\nHi there.<|end|>\n"
                                       "<|user|>\nWhat is 2+2?\n<|end|>\n<|assistant|>\n";

        const char * gemma3 = "vocab:ggml-vocab-gemma3.gguf";
        QTest::newRow("gemma-3/full") << gemma3 << "full" << true << Vars{} << k_gemma3_full;
        QTest::newRow("gemma-3/user/no-prompt") << gemma3 << "user" << false << Vars{} << "<s><start_of_turn>user\nHello!<end_of_turn>\n";
        QTest::newRow("gemma-2/no-system") << "google-gemma-2-2b-it.jinja"
                                           << "no_system" << true << Vars{}
                                           << "<s><start_of_turn>user\nHello!<end_of_turn>\n"
                                              "<start_of_turn>model\nHi there.<end_of_turn>\n"
                                              "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
                                              "<start_of_turn>model\n";

        const char * gemma4 = "google-gemma-4-31B-it.jinja";
        QTest::newRow("gemma-4/full") << gemma4 << "full" << true << Vars{}
                                      << "<s><|turn>system\nYou are a helpful assistant.<turn|>\n" + k_gemma4_turns +
                                             "<|channel>thought\n<channel|>";
        QTest::newRow("gemma-4/full/thinking on") << gemma4 << "full" << true << Vars{.enable_thinking = true}
                                                  << "<s><|turn>system\n<|think|>\nYou are a helpful assistant.<turn|>\n" + k_gemma4_turns;
        QTest::newRow("gemma-4/no-system") << gemma4 << "no_system" << true << Vars{}
                                           << "<s>" + k_gemma4_turns + "<|channel>thought\n<channel|>";
        QTest::newRow("gemma-4/full/thinking off")
            << gemma4 << "full" << true << Vars{.enable_thinking = false}
            << "<s><|turn>system\nYou are a helpful assistant.<turn|>\n" + k_gemma4_turns + "<|channel>thought\n<channel|>";
        QTest::newRow("gemma-4/user") << gemma4 << "user" << true << Vars{}
                                      << "<s><|turn>user\nHello!<turn|>\n<|turn>model\n<|channel>thought\n<channel|>";
        QTest::newRow("gemma-4/user/no-prompt") << gemma4 << "user" << false << Vars{} << "<s><|turn>user\nHello!<turn|>\n";
        // Thinking on opens a system turn of its own when there is no system message.
        QTest::newRow("gemma-4/user/thinking on") << gemma4 << "user" << true << Vars{.enable_thinking = true}
                                                  << "<s><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHello!<turn|>\n<|turn>model\n";
        // Replies never show their thinking (only next to tool calls), apart or in the text.
        QTest::newRow("gemma-4/think apart") << gemma4 << "think_apart" << true << Vars{.enable_thinking = true}
                                             << "<s><|turn>system\n<|think|>\n<turn|>\n" + k_gemma4_turns;
        QTest::newRow("gemma-4/channel in text")
            << gemma4 << "channel_in_text" << true << Vars{} << "<s>" + k_gemma4_turns + "<|channel>thought\n<channel|>";
        QTest::newRow("gemma-4/reply") << gemma4 << "reply" << false << Vars{}
                                       << "<s><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n4.<turn|>\n";
        QTest::newRow("gemma-4/developer") << gemma4 << "developer" << true << Vars{}
                                           << "<s><|turn>system\nBe brief.<turn|>\n<|turn>user\nHello!<turn|>\n<|turn>model\n"
                                              "<|channel>thought\n<channel|>";
        // A reply that follows a reply continues the model's turn: no second header.
        QTest::newRow("gemma-4/two replies") << gemma4 << "two_replies" << true << Vars{}
                                             << "<s><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\nLet me see.<turn|>\n4.<turn|>\n"
                                                "<|turn>model\n<|channel>thought\n<channel|>";
    }
    void templates() {
        QFETCH(QString, file);
        QFETCH(QString, conv);
        QFETCH(bool, generation_prompt);
        QFETCH(Vars, vars);
        QFETCH(QString, expected);
        const std::string source = source_of(file);
        QVERIFY2(!source.empty(), qPrintable("missing template " + file));
        Result<ChatTemplate> tmpl = ChatTemplate::parse(source);
        QVERIFY2(tmpl.ok(), tmpl.status().message().c_str());
        Result<std::string> out = tmpl->render(conversation(conv), options(generation_prompt, vars));
        QVERIFY2(out.ok(), out.status().message().c_str());
        QCOMPARE(QString::fromStdString(*out), expected);
    }

    // Tool calls and their results through both templates (the Jinja paths chats do not
    // take: macros with keyword arguments, dictsort, items, loop.previtem, filters in
    // conditional expressions). The expected text is Hugging Face's rendering: jinja2 3.1.6
    // set up as apply_chat_template sets it up (trim_blocks, lstrip_blocks, its tojson).
    void toolConversations_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("expected");
        QTest::newRow("qwen3.5")
            << "Qwen3.5-4B.jinja"
            << QString(
                   "<|im_start|>system\n"
                   "# Tools\n"
                   "\n"
                   "You have access to the following functions:\n"
                   "\n"
                   "<tools>\n"
                   "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n"
                   "</tools>\n"
                   "\n"
                   "If you choose to call a function ONLY reply in the following format with NO suffix:\n"
                   "\n"
                   "<tool_call>\n"
                   "<function=example_function_name>\n"
                   "<parameter=example_parameter_1>\n"
                   "value_1\n"
                   "</parameter>\n"
                   "<parameter=example_parameter_2>\n"
                   "This is the value for the second parameter\n"
                   "that can span\n"
                   "multiple lines\n"
                   "</parameter>\n"
                   "</function>\n"
                   "</tool_call>\n"
                   "\n"
                   "<IMPORTANT>\n"
                   "Reminder:\n"
                   "- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
                   "- Required parameters MUST be specified\n"
                   "- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n"
                   "- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n"
                   "</IMPORTANT><|im_end|>\n"
                   "<|im_start|>user\n"
                   "Weather in Paris?<|im_end|>\n"
                   "<|im_start|>assistant\n"
                   "<think>\n"
                   "Need weather.\n"
                   "</think>\n"
                   "\n"
                   "<tool_call>\n"
                   "<function=get_weather>\n"
                   "<parameter=city>\n"
                   "Paris\n"
                   "</parameter>\n"
                   "</function>\n"
                   "</tool_call><|im_end|>\n"
                   "<|im_start|>user\n"
                   "<tool_response>\n"
                   "Sunny\n"
                   "</tool_response><|im_end|>\n"
                   "<|im_start|>assistant\n"
                   "<think>\n"
                   "\n"
                   "</think>\n"
                   "\n"
                   "It is sunny.<|im_end|>\n"
                   "<|im_start|>assistant\n"
                   "<think>\n");
        QTest::newRow("gemma-4")
            << "google-gemma-4-31B-it.jinja"
            << QString(
                   "<s><|turn>system\n"
                   "<|tool>declaration:get_weather{description:<|\"|>Get the weather<|\"|>,parameters:{properties:{city:{type:<|\"|>STRING<|\"|>}},required:[<|\"|>city<|\"|>],type:<|\"|>OBJECT<|\"|>}}<tool|><turn|>\n"
                   "<|turn>user\n"
                   "Weather in Paris?<turn|>\n"
                   "<|turn>model\n"
                   "<|channel>thought\n"
                   "Need weather.\n"
                   "<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|><|tool_response>response:get_weather{value:<|\"|>Sunny<|\"|>}<tool_response|>It is sunny.<turn|>\n"
                   "<|turn>model\n"
                   "<|channel>thought\n"
                   "<channel|>");
    }
    void toolConversations() {
        QFETCH(QString, file);
        QFETCH(QString, expected);
        Result<jinja::Template> t = jinja::Template::parse(read_template(file));
        QVERIFY2(t.ok(), t.status().message().c_str());
        Result<jinja::Value> context = jinja::parse_json(R"({
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "", "reasoning_content": "Need weather.",
                 "tool_calls": [{"id": "call_1", "type": "function",
                                 "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
                {"role": "assistant", "content": "It is sunny."}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
            "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
        QVERIFY2(context.ok(), context.status().message().c_str());
        Result<std::string> out = t->render(*context);
        QVERIFY2(out.ok(), out.status().message().c_str());
        QCOMPARE(QString::fromStdString(*out), expected);
    }

    // Mistral Small 3.2 writes today's date into its default system prompt.
    void mistralSmallDefaultSystemHasTheDate() {
        Result<ChatTemplate> tmpl = ChatTemplate::parse(read_template("Mistral-Small-3.2-24B-Instruct-2506.jinja"));
        QVERIFY(tmpl.ok());
        Result<std::string> out = tmpl->render(conversation("user"), options(true));
        QVERIFY2(out.ok(), out.status().message().c_str());
        const QString text = QString::fromStdString(*out);
        QVERIFY(text.startsWith("<s>[SYSTEM_PROMPT]You are Mistral Small 3, a Large Language Model (LLM) created by Mistral AI"));
        QVERIFY(text.contains("The current date is 2025-08-05.\n\nWhen you're not sure"));
        QVERIFY(text.endsWith("perform the requested action at the moment.[/SYSTEM_PROMPT][INST]Hello![/INST]"));
    }

    // Every template in the shared set renders an ordinary chat, except where the template
    // itself refuses it (Gemma 2: no system role) or needs variables chats do not pass.
    void everySharedTemplateRenders() {
        const QDir dir(QStringLiteral(LONGREAD_SHARED_DIR) + "/data/chat-templates");
        const QStringList files = dir.entryList({"*.jinja"}, QDir::Files);
        QVERIFY(files.size() >= 28);
        for (const QString & file : files) {
            Result<ChatTemplate> tmpl = ChatTemplate::parse(read_template(file));
            QVERIFY2(tmpl.ok(), qPrintable(file + ": " + QString::fromStdString(tmpl.status().message())));
            for (const bool prompt : {true, false}) {
                Result<std::string> out = tmpl->render(conversation("full"), options(prompt));
                if (file == "google-gemma-2-2b-it.jinja") {
                    QCOMPARE(QString::fromStdString(out.status().message()), QString("System role not supported"));
                    out = tmpl->render(conversation("no_system"), options(prompt));
                } else if (file == "fireworks-ai-llama-3-firefunction-v2.jinja") {
                    QVERIFY(QString::fromStdString(out.status().message()).contains("'functions' is undefined"));
                    continue;
                }
                QVERIFY2(out.ok(), qPrintable(file + ": " + QString::fromStdString(out.status().message())));
                QVERIFY2(QString::fromStdString(*out).contains("Hello!"), qPrintable(file));
            }
        }
    }

    // The builtins stand in for these templates on ordinary chats: they must agree.
    void builtinMatchesItsTemplate_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<ChatFamily>("family");
        QTest::addColumn<QString>("conv");
        QTest::addColumn<bool>("generation_prompt");
        QTest::addColumn<Vars>("vars");
        struct Row {
            const char * file;
            ChatFamily family;
            std::vector<const char *> convs;
        };
        const std::vector<Row> rows = {
            {"Qwen-Qwen3-0.6B.jinja", ChatFamily::qwen3, {"full", "user", "no_system", "think_in_text", "think_apart", "reply"}},
            {"Qwen3.5-4B.jinja",
             ChatFamily::qwen35,
             {"full", "user", "no_system", "assistant_first", "think_in_text", "think_apart", "reply", "two_replies"}},
            {"google-gemma-4-31B-it.jinja",
             ChatFamily::gemma4,
             {"full", "user", "no_system", "assistant_first", "think_in_text", "think_apart", "reply", "two_replies", "channel_in_text",
              "developer"}},
            {"openai-gpt-oss-120b.jinja", ChatFamily::harmony, {"full", "user", "no_system", "think_apart", "reply"}},
            {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", ChatFamily::mistral3, {"full"}},
            {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ChatFamily::mistral3, {"full"}},
            {"vocab:ggml-vocab-gemma3.gguf", ChatFamily::gemma, {"full", "user", "no_system"}},
            {"microsoft-Phi-3.5-mini-instruct.jinja", ChatFamily::phi3, {"full", "user", "no_system"}},
        };
        const Vars variants[] = {{}, {.enable_thinking = false, .reasoning_effort = "high"}, {.enable_thinking = true}};
        for (const Row & r : rows) {
            for (const char * conv : r.convs) {
                for (const bool prompt : {true, false}) {
                    for (size_t v = 0; v < std::size(variants); ++v) {
                        QTest::addRow("%s/%s/%d/%zu", r.file, conv, prompt ? 1 : 0, v)
                            << r.file << r.family << conv << prompt << variants[v];
                    }
                }
            }
        }
    }
    void builtinMatchesItsTemplate() {
        QFETCH(QString, file);
        QFETCH(ChatFamily, family);
        QFETCH(QString, conv);
        QFETCH(bool, generation_prompt);
        QFETCH(Vars, vars);
        const std::string source = source_of(file);
        QCOMPARE(detect_family(source), family);
        Result<ChatTemplate> real = ChatTemplate::parse(source);
        QVERIFY(real.ok());
        const std::vector<ChatMessage> messages = conversation(conv);
        Result<std::string> want = real->render(messages, options(generation_prompt, vars));
        QVERIFY2(want.ok(), want.status().message().c_str());
        Result<std::string> got = ChatTemplate::builtin(family).render(messages, options(generation_prompt, vars));
        QVERIFY(got.ok());
        QCOMPARE(QString::fromStdString(*got), QString::fromStdString(*want));
    }

    void familyOfArchitecture_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<int>("family");  // -1: none
        QTest::newRow("qwen3") << "qwen3" << int(ChatFamily::qwen3);
        QTest::newRow("qwen3moe") << "qwen3moe" << int(ChatFamily::qwen3);
        QTest::newRow("qwen2") << "qwen2" << int(ChatFamily::chatml);
        QTest::newRow("gemma3") << "gemma3" << int(ChatFamily::gemma);
        QTest::newRow("gemma4") << "gemma4" << int(ChatFamily::gemma4);
        QTest::newRow("qwen35") << "qwen35" << int(ChatFamily::qwen35);
        QTest::newRow("qwen35moe") << "qwen35moe" << int(ChatFamily::qwen35);
        QTest::newRow("gpt-oss") << "gpt-oss" << int(ChatFamily::harmony);
        QTest::newRow("mistral3") << "mistral3" << int(ChatFamily::mistral3);
        QTest::newRow("phi3") << "phi3" << int(ChatFamily::phi3);
        QTest::newRow("llama") << "llama" << -1;
        QTest::newRow("empty") << "" << -1;
    }
    void familyOfArchitecture() {
        QFETCH(QString, arch);
        QFETCH(int, family);
        const std::optional<ChatFamily> got = family_of_architecture(arch.toStdString());
        QCOMPARE(got ? int(*got) : -1, family);
    }

    // A file without a template gets its architecture's format; a template that does not
    // parse keeps the family its markers show.
    void fallbackFromTheArchitecture() {
        std::string reason;
        const ChatTemplate qwen3 = ChatTemplate::for_model("", "qwen3", &reason);
        QVERIFY(qwen3.is_builtin());
        QCOMPARE(qwen3.family(), ChatFamily::qwen3);
        QVERIFY2(QString::fromStdString(reason).contains("qwen3 format of architecture 'qwen3'"), reason.c_str());
        QCOMPARE(ChatTemplate::for_model("", "gpt-oss").family(), ChatFamily::harmony);
        QCOMPARE(ChatTemplate::for_model("", "gemma3").family(), ChatFamily::gemma);
        QCOMPARE(ChatTemplate::for_model("", "gemma4").family(), ChatFamily::gemma4);
        QCOMPARE(ChatTemplate::for_model("", "qwen35").family(), ChatFamily::qwen35);
        QCOMPARE(ChatTemplate::for_model("", "qwen35moe").family(), ChatFamily::qwen35);
        // A broken Gemma 4 or Qwen3.5 template keeps its own format.
        QCOMPARE(ChatTemplate::for_model("{% if %}<|turn>user\n<turn|>", "llama").family(), ChatFamily::gemma4);
        QCOMPARE(ChatTemplate::for_model("{% if %}<|im_start|>{{ enable_thinking }}<function=", "llama").family(), ChatFamily::qwen35);
        QCOMPARE(ChatTemplate::for_model("", "mistral3").family(), ChatFamily::mistral3);
        QCOMPARE(ChatTemplate::for_model("", "llama").family(), ChatFamily::plain);
        QCOMPARE(ChatTemplate::for_model("{% if %}<|im_start|>", "gpt-oss").family(), ChatFamily::chatml);
        QCOMPARE(ChatTemplate::for_model("{% if %}", "gpt-oss").family(), ChatFamily::harmony);
        const ChatTemplate own = ChatTemplate::for_model(read_template("openai-gpt-oss-120b.jinja"), "qwen3", &reason);
        QVERIFY(!own.is_builtin());
        QVERIFY(reason.empty());
    }

    // The tiny 2026 models carry no chat template: their architecture picks the builtin.
    void tinyModelsUseTheirArchitecturesFormat_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<ChatFamily>("family");
        QTest::newRow("qwen35") << "tiny-qwen35-f32.gguf" << ChatFamily::qwen35;
        QTest::newRow("qwen35moe") << "tiny-qwen35moe-f32.gguf" << ChatFamily::qwen35;
        QTest::newRow("gemma4") << "tiny-gemma4-f32.gguf" << ChatFamily::gemma4;
    }
    void tinyModelsUseTheirArchitecturesFormat() {
        QFETCH(QString, model);
        QFETCH(ChatFamily, family);
        const auto file = gguf::GgufFile::open(std::string(LONGREAD_SHARED_DIR) + "/models/tiny-2026/" + model.toStdString());
        QVERIFY2(file.ok(), file.status().message().c_str());
        const auto arch = file->get_string("general.architecture");
        QVERIFY(arch.ok() && *arch);
        const auto source = file->get_string("tokenizer.chat_template");
        QVERIFY(source.ok() && !*source);
        std::string reason;
        const ChatTemplate t = ChatTemplate::for_model("", **arch, &reason);
        QVERIFY(t.is_builtin());
        QCOMPARE(t.family(), family);
        QVERIFY2(QString::fromStdString(reason).contains("format of architecture"), reason.c_str());
    }

    void familyNames() {
        QCOMPARE(QString::fromStdString(std::string(chat_family_name(ChatFamily::qwen3))), QString("qwen3"));
        QCOMPARE(QString::fromStdString(std::string(chat_family_name(ChatFamily::harmony))), QString("harmony"));
        QCOMPARE(QString::fromStdString(std::string(chat_family_name(ChatFamily::mistral3))), QString("mistral3"));
        QCOMPARE(QString::fromStdString(std::string(chat_family_name(ChatFamily::qwen35))), QString("qwen35"));
        QCOMPARE(QString::fromStdString(std::string(chat_family_name(ChatFamily::gemma4))), QString("gemma4"));
    }
};

QTEST_GUILESS_MAIN(TestChatFamilies)
#include "test_chat_families.moc"
