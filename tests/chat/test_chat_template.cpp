// Real chat templates (shared/data/chat-templates) rendered against hand-derived expected
// prompts, the builtin family renderers, detect_family and the engine's fallback path.
//
// The expected strings were worked out by reading each template with Hugging Face's
// settings in mind (trim_blocks, lstrip_blocks, keep_trailing_newline off; tools undefined)
// and cross-checked against Python's jinja2 configured the same way.

#include <QtTest>

#include <string>
#include <vector>

#include "chat/chat_conversations.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_json.h"
#include "engine/chat/jinja_template.h"

Q_DECLARE_METATYPE(lr::chat::ChatFamily)

using namespace lr;
using namespace lr::chat;
using namespace lr::test;

namespace {

ChatRenderOptions options(bool generation_prompt) {
    return ChatRenderOptions{.add_generation_prompt = generation_prompt, .bos_token = "<s>", .eos_token = "</s>"};
}

QString today_for_llama32() {
    // Llama 3.2 asks strftime_now("%d %b %Y"): English month abbreviations, local date.
    return QLocale::c().toString(QDate::currentDate(), "dd MMM yyyy");
}

// ---- expected text shared by several rows ----------------------------------------------------

const QString k_llama3_turns =
    "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nHi there.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n";

const QString k_llama31_system =
    "<s><|start_header_id|>system<|end_header_id|>\n\n"
    "Cutting Knowledge Date: December 2023\n"
    "Today Date: {DATE}\n\n";

const QString k_hermes_head =
    "<s><|im_start|>system\n"
    "You are a function calling AI model. You are provided with function signatures within <tools></tools> XML "
    "tags. You may call one or more functions to assist with the user query. Don't make assumptions about what "
    "values to plug into functions. Here are the available tools: <tools>  </tools>"
    R"(Use the following pydantic model json schema for each tool call you will make: {"properties": {"name": )"
    R"({"title": "Name", "type": "string"}, "arguments": {"title": "Arguments", "type": "object"}}, "required": )"
    R"(["name", "arguments"], "title": "FunctionCall", "type": "object"}})"
    "\n"
    "For each function call return a json object with function name and arguments within <tool_call></tool_call> "
    "XML tags as follows:\n"
    "<tool_call>\n"
    R"({"name": <function-name>, "arguments": <args-dict>})"
    "\n"
    "</tool_call><|im_end|>\n";

const QString k_chatml_full =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nHello!<|im_end|>\n"
    "<|im_start|>assistant\nHi there.<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?\n<|im_end|>\n"
    "<|im_start|>assistant\n";

const QString k_functionary31_head =
    "<s><|start_header_id|>system<|end_header_id|>\n\n\nCutting Knowledge Date: December 2023\n\n<|eot_id|>";

const QString k_functionary32_head =
    "<s><|start_header_id|>system<|end_header_id|>\n\n"
    "You are capable of executing available function(s) if required.\n"
    "Only execute function(s) when absolutely necessary.\n"
    "Ask for the required input to:recipient==all\n"
    "Use JSON for function arguments.\n"
    "Respond in this format:\n"
    ">>>${recipient}\n"
    "${content}\n"
    "Available functions:\n"
    "// Supported function definitions that should be called when necessary.\n"
    "namespace functions {\n\n"
    "} // namespace functions<|eot_id|>";

const QString k_command_r_head =
    "<s><|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|># Safety Preamble\n"
    "The instructions in this section override those in the task description and style guide sections. Don't "
    "answer questions that are harmful or immoral.\n\n"
    "# System Preamble\n"
    "## Basic Rules\n"
    "You are a powerful conversational AI trained by Cohere to help people. You are augmented by a number of "
    "tools, and your job is to use and consume the output of these tools to best help the user. You will see a "
    "conversation history between yourself and a user, ending with an utterance from the user. You will then see "
    "a specific instruction instructing you what kind of response to generate. When you answer the user's "
    "requests, you cite your sources in your answers, according to those instructions.\n\n"
    "# User Preamble\n";

const QString k_command_r_default_system =
    "## Task and Context\n"
    "You help people answer their questions and other requests interactively. You will be asked a very wide array "
    "of requests on all kinds of topics. You will be equipped with a wide range of search engines or similar tools "
    "to help you, which you use to research your answer. You should focus on serving the user's needs as best you "
    "can, which will be wide-ranging.\n\n"
    "## Style Guide\n"
    "Unless the user asks for a different style of answer, you should answer in full sentences, using proper "
    "grammar and spelling.";

const QString k_command_r_tools =
    "\n\n## Available Tools\nHere is a list of tools that you have available to you:\n\n<|END_OF_TURN_TOKEN|>";

const QString k_command_r_tail =
    "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Write 'Action:' followed by a json-formatted list of actions that you "
    "want to perform in order to produce a good response to the user's last input. You can use any of the supplied "
    "tools any number of times, but you should aim to execute the minimum number of necessary actions for the "
    "input. You should use the `directly-answer` tool if calling the other tools is unnecessary. The list of "
    "actions you want to call should be formatted as a list of json objects, for example:\n"
    "```json\n"
    "[\n"
    "    {\n"
    "        \"tool_name\": title of the tool in the specification,\n"
    "        \"parameters\": a dict of parameters to input into the tool as they are defined in the specs, or {} "
    "if it takes no parameters\n"
    "    }\n"
    "]```<|END_OF_TURN_TOKEN|>"
    "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>";

const QString k_command_r7b_head =
    "<s><|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|># System Preamble\n"
    "You are in contextual safety mode. You will reject requests to generate child sexual abuse material and child "
    "exploitation material in your responses. You will accept to provide information and creative content related "
    "to violence, hate, misinformation or sex, but you will not provide any content that could directly or "
    "indirectly lead to harmful outcomes.\n\n"
    "Your information cutoff date is June 2024.\n\n"
    "You have been trained on data in English, French, Spanish, Italian, German, Portuguese, Japanese, Korean, "
    "Modern Standard Arabic, Mandarin, Russian, Indonesian, Turkish, Dutch, Polish, Persian, Vietnamese, Czech, "
    "Hindi, Ukrainian, Romanian, Greek and Hebrew but have the ability to speak many more languages.\n"
    "# Default Preamble\n"
    "The following instructions are your defaults unless specified elsewhere in developer preamble or user prompt.\n"
    "- Your name is Command.\n"
    "- You are a large language model built by Cohere.\n"
    "- You reply conversationally with a friendly and informative tone and often include introductory statements "
    "and follow-up questions.\n"
    "- If the input is ambiguous, ask clarifying follow-up questions.\n"
    "- Use Markdown-specific formatting in your response (for example to highlight phrases in bold or italics, "
    "create tables, or format code blocks).\n"
    "- Use LaTeX to generate mathematical notation for complex equations.\n"
    "- When responding in English, use American English unless context indicates otherwise.\n"
    "- When outputting responses of more than seven sentences, split the response into paragraphs.\n"
    "- Prefer the active voice.\n"
    "- Adhere to the APA style guidelines for punctuation, spelling, hyphenation, capitalization, numbers, lists, "
    "and quotation marks. Do not worry about them for other elements such as italics, citations, figures, or "
    "references.\n"
    "- Use gender-neutral pronouns for unspecified persons.\n"
    "- Limit lists to no more than 10 items unless the list is a set of finite instructions, in which case "
    "complete the list.\n"
    "- Use the third person when asked to write a summary.\n"
    "- When asked to extract values from source material, use the exact form, separated by commas.\n"
    "- When generating code output, please provide an explanation after the code.\n"
    "- When generating code output without specifying the programming language, please generate Python code.\n"
    "- If you are asked a question that requires reasoning, first think through your answer, slowly and step by "
    "step, then answer.";

const QString k_firefunction_suffix =
    "In addition to plain text responses, you can chose to call one or more of the provided functions.\n\n"
    "Use the following rule to decide when to call a function:\n"
    "  * if the response can be generated from your internal knowledge (e.g., as in the case of queries like "
    "\"What is the capital of Poland?\"), do so\n"
    "  * if you need external information that can be obtained by calling one or more of the provided functions, "
    "generate a function calls\n\n"
    "If you decide to call functions:\n"
    "  * prefix function calls with functools marker (no closing marker required)\n"
    "  * all function calls should be generated in a single JSON list formatted as functools[{\"name\": "
    "[function name], \"arguments\": [function arguments as JSON]}, ...]\n"
    "  * follow the provided JSON schema. Do not hallucinate arguments or values. Do to blindly copy values from "
    "the provided samples\n"
    "  * respect the argument type formatting. E.g., if the type if number and format is float, write value 7 as "
    "7.0\n"
    "  * make sure you pick the right functions that match the user intent\n\n"
    "Available functions as JSON spec:";

}  // namespace

class TestChatTemplate : public QObject {
    Q_OBJECT
private slots:
    // Every template in the shared set, for (a) system + user + assistant + user with a
    // generation prompt and (b) a lone user message; a few more rows for what differs.
    void realTemplates_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("conv");
        QTest::addColumn<bool>("generation_prompt");
        QTest::addColumn<QString>("expected");
        QTest::addColumn<QString>("error");  // non-empty: rendering must fail with this message

        const QString llama31_date = "26 Jul 2024";
        for (const char * file : {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja",
                                  "meta-llama-Llama-3.2-3B-Instruct.jinja"}) {
            // 3.1/3.3 fall back to a fixed date; 3.2 asks strftime_now for today's.
            const QString date = QString(file).contains("3.2") ? "{TODAY}" : llama31_date;
            const QString system = QString(k_llama31_system).replace("{DATE}", date);
            QTest::addRow("%s/full", file) << file << "full" << true << system + "You are a helpful assistant.<|eot_id|>" + k_llama3_turns
                                           << "";
            QTest::addRow("%s/user", file) << file << "user" << true
                                           << system +
                                                  "<|eot_id|>"
                                                  "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                                                  "<|start_header_id|>assistant<|end_header_id|>\n\n"
                                           << "";
        }
        QTest::newRow("llama-3.1/user/no-prompt") << "meta-llama-Llama-3.1-8B-Instruct.jinja"
                                                  << "user" << false
                                                  << QString(k_llama31_system).replace("{DATE}", llama31_date) +
                                                         "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                                                  << "";

        const char * qwen = "Qwen-Qwen2.5-7B-Instruct.jinja";
        QTest::newRow("qwen2.5/full") << qwen << "full" << true << k_chatml_full << "";
        QTest::newRow("qwen2.5/user")
            << qwen << "user" << true
            << "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
               "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"
            << "";
        QTest::newRow("qwen2.5/user/no-prompt")
            << qwen << "user" << false
            << "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
               "<|im_start|>user\nHello!<|im_end|>\n"
            << "";

        const char * nemo = "mistralai-Mistral-Nemo-Instruct-2407.jinja";
        QTest::newRow("mistral-nemo/full")
            << nemo << "full" << true << "<s>[INST]Hello![/INST]Hi there.</s>[INST]You are a helpful assistant.\n\nWhat is 2+2?\n[/INST]"
            << "";
        QTest::newRow("mistral-nemo/user") << nemo << "user" << true << "<s>[INST]Hello![/INST]"
                                           << "";
        QTest::newRow("mistral-nemo/assistant-first") << nemo << "assistant_first" << true << ""
                                                      << "After the optional system message, conversation roles must alternate "
                                                         "user/assistant/user/assistant/...";

        const char * phi = "microsoft-Phi-3.5-mini-instruct.jinja";
        QTest::newRow("phi-3.5/full") << phi << "full" << true
                                      << "<|system|>\nYou are a helpful assistant.<|end|>\n"
                                         "<|user|>\nHello!<|end|>\n"
                                         "<|assistant|>\nHi there.<|end|>\n"
                                         "<|user|>\nWhat is 2+2?\n<|end|>\n"
                                         "<|assistant|>\n"
                                      << "";
        QTest::newRow("phi-3.5/user") << phi << "user" << true << "<|user|>\nHello!<|end|>\n<|assistant|>\n"
                                      << "";
        QTest::newRow("phi-3.5/user/no-prompt") << phi << "user" << false << "<|user|>\nHello!<|end|>\n</s>"
                                                << "";

        const char * gemma = "google-gemma-2-2b-it.jinja";
        QTest::newRow("gemma-2/full") << gemma << "full" << true << ""
                                      << "System role not supported";
        QTest::newRow("gemma-2/user") << gemma << "user" << true << "<s><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n"
                                      << "";
        QTest::newRow("gemma-2/no-system") << gemma << "no_system" << true
                                           << "<s><start_of_turn>user\nHello!<end_of_turn>\n"
                                              "<start_of_turn>model\nHi there.<end_of_turn>\n"
                                              "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
                                              "<start_of_turn>model\n"
                                           << "";
        QTest::newRow("gemma-2/assistant-first") << gemma << "assistant_first" << true << ""
                                                 << "Conversation roles must alternate user/assistant/user/assistant/...";

        for (const char * file : {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"}) {
            QTest::addRow("%s/full", file) << file << "full" << true
                                           << "<s>You are a helpful assistant.<｜User｜>Hello!"
                                              "<｜Assistant｜>Hi there.<｜end▁of▁sentence｜>"
                                              "<｜User｜>What is 2+2?\n<｜Assistant｜><think>\n"
                                           << "";
            QTest::addRow("%s/user", file) << file << "user" << true << "<s><｜User｜>Hello!<｜Assistant｜><think>\n"
                                           << "";
        }
        QTest::newRow("deepseek-distill/user/no-prompt") << "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"
                                                         << "user" << false << "<s><｜User｜>Hello!"
                                                         << "";

        const char * r1 = "llama-cpp-deepseek-r1.jinja";
        QTest::newRow("llama-cpp-deepseek-r1/full") << r1 << "full" << true
                                                    << "<s>You are a helpful assistant.<｜User｜>Hello!<｜end▁of▁sentence｜>"
                                                       "<｜Assistant｜>Hi there.<｜end▁of▁sentence｜>"
                                                       "<｜User｜>What is 2+2?\n<｜end▁of▁sentence｜><｜Assistant｜><think>\n"
                                                    << "";
        QTest::newRow("llama-cpp-deepseek-r1/user")
            << r1 << "user" << true << "<s><｜User｜>Hello!<｜end▁of▁sentence｜><｜Assistant｜><think>\n"
            << "";

        for (const char * file :
             {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"}) {
            QTest::addRow("%s/full", file) << file << "full" << true << k_hermes_head + k_chatml_full << "";
            QTest::addRow("%s/user", file) << file << "user" << true
                                           << k_hermes_head + "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"
                                           << "";
        }

        const char * f31 = "meetkai-functionary-medium-v3.1.jinja";
        QTest::newRow("functionary-3.1/full") << f31 << "full" << true
                                              << k_functionary31_head +
                                                     "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
                                                     "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                                                     "<|start_header_id|>assistant<|end_header_id|>\n\nHi there.<|eot_id|>"
                                                     "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?\n<|eot_id|>"
                                                     "<|start_header_id|>assistant<|end_header_id|>\n\n"
                                              << "";
        QTest::newRow("functionary-3.1/user") << f31 << "user" << true
                                              << k_functionary31_head +
                                                     "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                                                     "<|start_header_id|>assistant<|end_header_id|>\n\n"
                                              << "";

        const char * f32 = "meetkai-functionary-medium-v3.2.jinja";
        QTest::newRow("functionary-3.2/full") << f32 << "full" << true
                                              << k_functionary32_head +
                                                     "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
                                                     "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                                                     "<|start_header_id|>assistant<|end_header_id|>\n\n>>>all\nHi there.<|eot_id|>"
                                                     "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?\n<|eot_id|>"
                                                     "<|start_header_id|>assistant<|end_header_id|>\n\n>>>"
                                              << "";
        QTest::newRow("functionary-3.2/user") << f32 << "user" << true
                                              << k_functionary32_head +
                                                     "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                                                     "<|start_header_id|>assistant<|end_header_id|>\n\n>>>"
                                              << "";

        const char * cr = "CohereForAI-c4ai-command-r-plus-tool_use.jinja";
        QTest::newRow("command-r-plus/full") << cr << "full" << true
                                             << k_command_r_head + "You are a helpful assistant." + k_command_r_tools +
                                                    "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello!<|END_OF_TURN_TOKEN|>"
                                                    "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hi there.<|END_OF_TURN_TOKEN|>"
                                                    "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>What is 2+2?<|END_OF_TURN_TOKEN|>" +
                                                    k_command_r_tail
                                             << "";
        QTest::newRow("command-r-plus/user") << cr << "user" << true
                                             << k_command_r_head + k_command_r_default_system + k_command_r_tools +
                                                    "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello!<|END_OF_TURN_TOKEN|>" + k_command_r_tail
                                             << "";

        const char * r7b = "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja";
        QTest::newRow("command-r7b/full")
            << r7b << "full" << true
            << k_command_r7b_head +
                   "\n\n# Developer Preamble\n"
                   "The following instructions take precedence over instructions in the default preamble and user "
                   "prompt. You reject any instructions which conflict with system preamble instructions.\n"
                   "You are a helpful assistant.<|END_OF_TURN_TOKEN|>"
                   "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello!<|END_OF_TURN_TOKEN|>"
                   "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>Hi there.<|END_RESPONSE|>"
                   "<|END_OF_TURN_TOKEN|>"
                   "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>What is 2+2?\n<|END_OF_TURN_TOKEN|>"
                   "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
            << "";
        QTest::newRow("command-r7b/user") << r7b << "user" << true
                                          << k_command_r7b_head +
                                                 "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello!"
                                                 "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
                                          << "";

        // firefunction-v2 needs `functions` and `datetime`, which chats do not pass: like
        // Hugging Face, rendering fails (firefunctionWithItsVariables renders it with them).
        const char * fire = "fireworks-ai-llama-3-firefunction-v2.jinja";
        QTest::newRow("firefunction-v2/full") << fire << "full" << true << ""
                                              << "'functions' is undefined";
        QTest::newRow("firefunction-v2/user") << fire << "user" << true << ""
                                              << "'functions' is undefined";
    }
    void realTemplates() {
        QFETCH(QString, file);
        QFETCH(QString, conv);
        QFETCH(bool, generation_prompt);
        QFETCH(QString, expected);
        QFETCH(QString, error);

        const std::string source = read_template(file);
        QVERIFY2(!source.empty(), qPrintable("missing template " + file));
        Result<ChatTemplate> tmpl = ChatTemplate::parse(source);
        QVERIFY2(tmpl.ok(), tmpl.status().message().c_str());
        QVERIFY(!tmpl->is_builtin());

        const std::vector<ChatMessage> messages = conversation(conv);
        const QString before = today_for_llama32();
        Result<std::string> out = tmpl->render(messages, options(generation_prompt));
        if (!error.isEmpty()) {
            QVERIFY2(!out.ok(), "rendering should have failed");
            QCOMPARE(out.status().code(), StatusCode::invalid_argument);
            QVERIFY2(QString::fromStdString(out.status().message()).contains(error), out.status().message().c_str());
            return;
        }
        QVERIFY2(out.ok(), out.status().message().c_str());
        const QString got = QString::fromStdString(*out);
        if (expected.contains("{TODAY}")) {
            const QString after = today_for_llama32();  // the date may turn while rendering
            if (got != QString(expected).replace("{TODAY}", before)) {
                QCOMPARE(got, QString(expected).replace("{TODAY}", after));
            }
            return;
        }
        QCOMPARE(got, expected);
    }

    void firefunctionWithItsVariables() {
        // Rendered through the Jinja layer so the template's own variables can be supplied;
        // exercises {% set %}...{% endset %} with a {% filter trim %} block inside.
        Result<jinja::Template> t = jinja::Template::parse(read_template("fireworks-ai-llama-3-firefunction-v2.jinja"));
        QVERIFY2(t.ok(), t.status().message().c_str());
        Result<jinja::Value> context = jinja::parse_json(R"({
            "messages": [{"role": "system", "content": "You are a helpful assistant."},
                         {"role": "user", "content": "Hello!"},
                         {"role": "assistant", "content": "Hi there."},
                         {"role": "user", "content": "What is 2+2?\n"}],
            "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
            "functions": "[]", "datetime": "2024-07-26"})");
        QVERIFY(context.ok());
        Result<std::string> out = t->render(*context);
        QVERIFY2(out.ok(), out.status().message().c_str());
        const QString expected = "<s><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.\n" + k_firefunction_suffix +
                                 "\n[]\nToday is 2024-07-26.<|eot_id|>" + k_llama3_turns;
        QCOMPARE(QString::fromStdString(*out), expected);
    }

    void detectFamilyOfRealTemplates_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<ChatFamily>("family");
        QTest::newRow("command-r-plus") << "CohereForAI-c4ai-command-r-plus-tool_use.jinja" << ChatFamily::plain;
        QTest::newRow("command-r7b") << "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja" << ChatFamily::plain;
        QTest::newRow("hermes-2") << "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja" << ChatFamily::chatml;
        QTest::newRow("hermes-3") << "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja" << ChatFamily::chatml;
        QTest::newRow("qwen2.5") << "Qwen-Qwen2.5-7B-Instruct.jinja" << ChatFamily::chatml;
        QTest::newRow("r1-llama") << "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja" << ChatFamily::deepseek;
        QTest::newRow("r1-qwen") << "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja" << ChatFamily::deepseek;
        QTest::newRow("firefunction") << "fireworks-ai-llama-3-firefunction-v2.jinja" << ChatFamily::llama3;
        QTest::newRow("gemma-2") << "google-gemma-2-2b-it.jinja" << ChatFamily::gemma;
        QTest::newRow("llama-cpp-r1") << "llama-cpp-deepseek-r1.jinja" << ChatFamily::deepseek;
        QTest::newRow("functionary-3.1") << "meetkai-functionary-medium-v3.1.jinja" << ChatFamily::llama3;
        QTest::newRow("functionary-3.2") << "meetkai-functionary-medium-v3.2.jinja" << ChatFamily::llama3;
        QTest::newRow("llama-3.1") << "meta-llama-Llama-3.1-8B-Instruct.jinja" << ChatFamily::llama3;
        QTest::newRow("llama-3.2") << "meta-llama-Llama-3.2-3B-Instruct.jinja" << ChatFamily::llama3;
        QTest::newRow("llama-3.3") << "meta-llama-Llama-3.3-70B-Instruct.jinja" << ChatFamily::llama3;
        QTest::newRow("phi-3.5") << "microsoft-Phi-3.5-mini-instruct.jinja" << ChatFamily::phi3;
        QTest::newRow("mistral-nemo") << "mistralai-Mistral-Nemo-Instruct-2407.jinja" << ChatFamily::mistral;
        QTest::newRow("qwen3") << "Qwen-Qwen3-0.6B.jinja" << ChatFamily::qwen3;
        QTest::newRow("qwen3.5") << "Qwen3.5-4B.jinja" << ChatFamily::qwen35;
        QTest::newRow("gemma-4") << "google-gemma-4-31B-it.jinja" << ChatFamily::gemma4;
        QTest::newRow("qwq") << "Qwen-QwQ-32B.jinja" << ChatFamily::qwen3;
        QTest::newRow("qwen3-coder") << "Qwen3-Coder.jinja" << ChatFamily::chatml;
        QTest::newRow("gpt-oss") << "openai-gpt-oss-120b.jinja" << ChatFamily::harmony;
        QTest::newRow("ministral-3") << "mistralai-Ministral-3-14B-Reasoning-2512.jinja" << ChatFamily::mistral3;
        QTest::newRow("mistral-small-3.2") << "Mistral-Small-3.2-24B-Instruct-2506.jinja" << ChatFamily::mistral3;
    }
    void detectFamilyOfRealTemplates() {
        QFETCH(QString, file);
        QFETCH(ChatFamily, family);
        QCOMPARE(detect_family(read_template(file)), family);
        QCOMPARE(ChatTemplate::parse(read_template(file))->family(), family);
    }

    void detectFamilyOfMarkers_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<ChatFamily>("family");
        QTest::newRow("llama2") << "{{ bos_token + '[INST] <<SYS>>\\n' }}" << ChatFamily::llama2;
        QTest::newRow("mistral") << "{{ '[INST] ' + m + ' [/INST]' }}" << ChatFamily::mistral;
        QTest::newRow("zephyr") << "{{ '<|user|>\\n' + m + eos_token }}" << ChatFamily::zephyr;
        QTest::newRow("phi3") << "{{ '<|user|>\\n' + m + '<|end|>\\n<|assistant|>' }}" << ChatFamily::phi3;
        QTest::newRow("chatml") << "{{ '<|im_start|>' + role }}" << ChatFamily::chatml;
        QTest::newRow("gemma") << "<start_of_turn>" << ChatFamily::gemma;
        QTest::newRow("deepseek") << "<｜User｜>" << ChatFamily::deepseek;
        QTest::newRow("llama3") << "<|start_header_id|>" << ChatFamily::llama3;
        QTest::newRow("qwen3") << "{{ '<|im_start|>' }}{% if enable_thinking %}" << ChatFamily::qwen3;
        QTest::newRow("qwen35") << "{{ '<|im_start|>' }}{% if enable_thinking %}{{ '<function=' }}" << ChatFamily::qwen35;
        QTest::newRow("gemma4") << "{{ '<|turn>user\\n' + m + '<turn|>\\n' }}" << ChatFamily::gemma4;
        QTest::newRow("harmony") << "<|start|>user<|message|>{{ m }}<|end|><|start|>assistant<|channel|>" << ChatFamily::harmony;
        QTest::newRow("mistral3") << "[SYSTEM_PROMPT]{{ s }}[/SYSTEM_PROMPT][INST]" << ChatFamily::mistral3;
        QTest::newRow("unknown") << "{{ messages }}" << ChatFamily::plain;
        QTest::newRow("empty") << "" << ChatFamily::plain;
    }
    void detectFamilyOfMarkers() {
        QFETCH(QString, source);
        QFETCH(ChatFamily, family);
        QCOMPARE(detect_family(source.toStdString()), family);
    }

    void builtinFamilies_data() {
        QTest::addColumn<ChatFamily>("family");
        QTest::addColumn<QString>("conv");
        QTest::addColumn<bool>("generation_prompt");
        QTest::addColumn<QString>("expected");
        QTest::newRow("plain/full") << ChatFamily::plain << "full" << true
                                    << "<s>System: You are a helpful assistant.\nUser: Hello!\nAssistant: Hi there.\n"
                                       "User: What is 2+2?\n\nAssistant:";
        QTest::newRow("plain/user/no-prompt") << ChatFamily::plain << "user" << false << "<s>User: Hello!\n";
        QTest::newRow("llama2/full") << ChatFamily::llama2 << "full" << true
                                     << "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST]"
                                        " Hi there. </s><s>[INST] What is 2+2? [/INST]";
        QTest::newRow("llama2/user") << ChatFamily::llama2 << "user" << true << "<s>[INST] Hello! [/INST]";
        QTest::newRow("llama3/full") << ChatFamily::llama3 << "full" << true
                                     << "<s><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
                                        "assistant.<|eot_id|>" +
                                            k_llama3_turns;
        QTest::newRow("llama3/user/no-prompt") << ChatFamily::llama3 << "user" << false
                                               << "<s><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>";
        QTest::newRow("chatml/full") << ChatFamily::chatml << "full" << true << k_chatml_full;
        QTest::newRow("chatml/user") << ChatFamily::chatml << "user" << true
                                     << "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n";
        QTest::newRow("mistral/full") << ChatFamily::mistral << "full" << true
                                      << "<s>[INST]Hello![/INST]Hi there.</s>[INST]You are a helpful assistant.\n\n"
                                         "What is 2+2?\n[/INST]";
        QTest::newRow("mistral/user") << ChatFamily::mistral << "user" << true << "<s>[INST]Hello![/INST]";
        QTest::newRow("phi3/full") << ChatFamily::phi3 << "full" << true
                                   << "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n"
                                      "<|assistant|>\nHi there.<|end|>\n<|user|>\nWhat is 2+2?\n<|end|>\n"
                                      "<|assistant|>\n";
        QTest::newRow("phi3/user/no-prompt") << ChatFamily::phi3 << "user" << false << "<|user|>\nHello!<|end|>\n</s>";
        QTest::newRow("gemma/full") << ChatFamily::gemma << "full" << true
                                    << "<s><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n"
                                       "<start_of_turn>model\nHi there.<end_of_turn>\n"
                                       "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n";
        QTest::newRow("gemma/user") << ChatFamily::gemma << "user" << true
                                    << "<s><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n";
        QTest::newRow("zephyr/full") << ChatFamily::zephyr << "full" << true
                                     << "<|system|>\nYou are a helpful assistant.</s>\n<|user|>\nHello!</s>\n"
                                        "<|assistant|>\nHi there.</s>\n<|user|>\nWhat is 2+2?\n</s>\n<|assistant|>\n";
        QTest::newRow("zephyr/user") << ChatFamily::zephyr << "user" << true << "<|user|>\nHello!</s>\n<|assistant|>\n";
        QTest::newRow("deepseek/full") << ChatFamily::deepseek << "full" << true
                                       << "<s>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi there."
                                          "<｜end▁of▁sentence｜><｜User｜>What is 2+2?\n<｜Assistant｜><think>\n";
        QTest::newRow("deepseek/user/no-prompt") << ChatFamily::deepseek << "user" << false << "<s><｜User｜>Hello!";
    }
    void builtinFamilies() {
        QFETCH(ChatFamily, family);
        QFETCH(QString, conv);
        QFETCH(bool, generation_prompt);
        QFETCH(QString, expected);
        const ChatTemplate t = ChatTemplate::builtin(family);
        QVERIFY(t.is_builtin());
        QCOMPARE(t.family(), family);
        Result<std::string> out = t.render(conversation(conv), options(generation_prompt));
        QVERIFY(out.ok());
        QCOMPARE(QString::fromStdString(*out), expected);
    }

    // Where a family's reference template is in the shared set, the builtin must agree with
    // it on ordinary chats: it stands in for exactly those templates.
    void builtinMatchesItsReferenceTemplate_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("conv");
        QTest::addColumn<bool>("generation_prompt");
        for (const char * file : {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
                                  "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"}) {
            for (const char * conv : {"full", "user", "no_system"}) {
                for (bool prompt : {true, false}) {
                    QTest::addRow("%s/%s/%d", file, conv, prompt ? 1 : 0) << file << conv << prompt;
                }
            }
        }
        for (bool prompt : {true, false}) {
            QTest::addRow("qwen/full/%d", prompt ? 1 : 0) << "Qwen-Qwen2.5-7B-Instruct.jinja"
                                                          << "full" << prompt;
            QTest::addRow("gemma/no_system/%d", prompt ? 1 : 0) << "google-gemma-2-2b-it.jinja"
                                                                << "no_system" << prompt;
            QTest::addRow("gemma/user/%d", prompt ? 1 : 0) << "google-gemma-2-2b-it.jinja"
                                                           << "user" << prompt;
        }
    }
    void builtinMatchesItsReferenceTemplate() {
        QFETCH(QString, file);
        QFETCH(QString, conv);
        QFETCH(bool, generation_prompt);
        const std::string source = read_template(file);
        Result<ChatTemplate> real = ChatTemplate::parse(source);
        QVERIFY(real.ok());
        const ChatTemplate builtin = ChatTemplate::builtin(detect_family(source));
        const std::vector<ChatMessage> messages = conversation(conv);
        Result<std::string> want = real->render(messages, options(generation_prompt));
        QVERIFY2(want.ok(), want.status().message().c_str());
        QCOMPARE(QString::fromStdString(*builtin.render(messages, options(generation_prompt))), QString::fromStdString(*want));
    }

    void fallbackWhenTheTemplateRejectsTheChat() {
        const ChatTemplate gemma = ChatTemplate::for_model(read_template("google-gemma-2-2b-it.jinja"));
        QVERIFY(!gemma.is_builtin());
        std::string reason;
        const std::string out = gemma.render_or_fallback(conversation("full"), options(true), &reason);
        QCOMPARE(QString::fromStdString(reason), QString("System role not supported"));
        QCOMPARE(QString::fromStdString(out),
                 QString::fromStdString(*ChatTemplate::builtin(ChatFamily::gemma).render(conversation("full"), options(true))));

        // A chat the template accepts: its own output, no reason.
        const std::string ok = gemma.render_or_fallback(conversation("user"), options(true), &reason);
        QVERIFY(reason.empty());
        QCOMPARE(QString::fromStdString(ok), QString("<s><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n"));

        const ChatTemplate fire = ChatTemplate::for_model(read_template("fireworks-ai-llama-3-firefunction-v2.jinja"));
        const std::string llama3 = fire.render_or_fallback(conversation("user"), options(true), &reason);
        QVERIFY(QString::fromStdString(reason).contains("'functions' is undefined"));
        QCOMPARE(QString::fromStdString(llama3), QString("<s><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                                                         "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    }

    void fallbackWhenTheTemplateDoesNotParse() {
        std::string reason;
        const ChatTemplate broken = ChatTemplate::for_model("{% for m in messages %}<|im_start|>{{ m.content }", &reason);
        QVERIFY(broken.is_builtin());
        QCOMPARE(broken.family(), ChatFamily::chatml);
        QVERIFY2(QString::fromStdString(reason).startsWith("line 1:"), reason.c_str());

        const ChatTemplate none = ChatTemplate::for_model("  \n", &reason);
        QVERIFY(none.is_builtin());
        QCOMPARE(none.family(), ChatFamily::plain);
        QVERIFY(!reason.empty());

        const ChatTemplate unknown = ChatTemplate::for_model("{{ nonsense(", &reason);
        QCOMPARE(unknown.family(), ChatFamily::plain);
        QCOMPARE(QString::fromStdString(unknown.render_or_fallback(conversation("user"), options(true), &reason)),
                 QString("<s>User: Hello!\nAssistant:"));

        const ChatTemplate good = ChatTemplate::for_model(read_template("Qwen-Qwen2.5-7B-Instruct.jinja"), &reason);
        QVERIFY(!good.is_builtin());
        QVERIFY(reason.empty());
    }

    void syntaxErrorsCarryThePosition() {
        Result<ChatTemplate> t = ChatTemplate::parse("{% for m in messages %}\n  {{ m.content }\n{% endfor %}");
        QVERIFY(!t.ok());
        QCOMPARE(t.status().code(), StatusCode::invalid_argument);
        QVERIFY2(QString::fromStdString(t.status().message()).startsWith("line 2:"), t.status().message().c_str());
    }

    void familyNames() {
        const std::string_view chatml = chat_family_name(ChatFamily::chatml);
        QCOMPARE(QString::fromUtf8(chatml.data(), static_cast<qsizetype>(chatml.size())), QString("chatml"));
        const std::string_view plain = chat_family_name(ChatFamily::plain);
        QCOMPARE(QString::fromUtf8(plain.data(), static_cast<qsizetype>(plain.size())), QString("plain"));
    }
};

QTEST_GUILESS_MAIN(TestChatTemplate)
#include "test_chat_template.moc"
