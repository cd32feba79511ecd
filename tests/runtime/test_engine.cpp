// The engine facade: loading (the bundled model, a file, errors), the session kept or
// rebuilt, a conversation's prompt tokenized once per document with exactly the tokens of
// rendering it whole (stories260K's SentencePiece and plain template; byte-level BPE models
// with ChatML and Llama 3 templates), replies that reuse the document's KV, and retention
// spans that are the document's own bytes.
#include <QTemporaryDir>
#include <QtTest>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/model/model.h"
#include "engine/model/random_model_writer.h"
#include "engine/runtime/chat_prompt.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/prompt_memo.h"
#include "engine/runtime/session.h"
#include "support/gguf_copy.h"
#include "support/reference_data.h"

using namespace lr;
using namespace lr::test;

namespace {

const LoadParams kBundledOnCpu{.backend = "cpu", .n_threads = 1};

// The conversations the prompt tests render: a document alone, with turns, with a document
// whose last line has no newline, without a title.
std::vector<Conversation> conversations(const std::string & story) {
    const std::vector<ChatTurn> turns{{"user", "Who is in the story?"}, {"assistant", "A girl and her dog."}};
    return {
        {.document_title = "story.txt", .document_text = story},
        {.document_title = "story.txt", .document_text = story, .turns = turns},
        {.document_title = "story.txt", .document_text = story.substr(0, story.size() / 2) + "the end", .turns = turns},
        {.document_title = "", .document_text = story, .turns = {{"user", "Hi"}}},
        {.turns = turns},
    };
}

}  // namespace

class TestEngine : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::string m_story;                      // 1.5 KB of the evaluation text, ending in a word
    std::string m_long_story;                 // 3 KB
    std::map<QString, std::string> m_models;  // name -> path

private slots:
    void initTestCase() {
        qputenv("XDG_CACHE_HOME", m_dir.path().toUtf8());
        QFile f(shared_path(QStringLiteral("data/text/tinystories_style_eval.txt")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const std::string text = f.readAll().toStdString();
        m_story = text.substr(0, text.find_last_not_of(" \n", 1500) + 1);
        m_long_story = text.substr(0, 3000);
        m_models[QStringLiteral("stories260K")] = kBundledModelName;
        // Byte-level BPE models with their vocabulary's own chat template (random weights).
        const std::pair<const char *, ModelArch> bpe[] = {{"qwen2", ModelArch::qwen2}, {"llama-bpe", ModelArch::llama}};
        for (const auto & [vocab, arch] : bpe) {
            const std::string path = (m_dir.path() + "/" + vocab + ".gguf").toStdString();
            const Status s = write_random_model(
                {.shape = ModelShape{.arch = arch,
                                     .n_vocab = 1,
                                     .n_ctx_train = 4096,
                                     .n_embd = 32,
                                     .n_layer = 1,
                                     .n_head = 2,
                                     .n_head_kv = 1,
                                     .n_ff = 64,
                                     .qkv_bias = arch == ModelArch::qwen2,
                                     .tied_output = true},
                 .output_path = path,
                 .vocab_from = shared_path(QStringLiteral("data/tokenizer/ggml-vocab-%1.gguf").arg(vocab)).toStdString(),
                 .n_threads = 1});
            QVERIFY2(s.ok(), s.message().c_str());
            m_models[QString::fromLatin1(vocab)] = path;
        }
    }

    void loadsTheBundledModel() {
        Engine engine;
        QVERIFY(!engine.has_model());
        const Result<ModelInfo> info = engine.load(kBundledOnCpu);
        QVERIFY2(info.ok(), info.status().message().c_str());
        QCOMPARE(info->path, std::string(kBundledModelName));
        QCOMPARE(info->architecture, std::string("llama"));
        QCOMPARE(info->chat_template, std::string("plain"));
        QVERIFY(info->chat_template_builtin);
        QCOMPARE(info->backend, std::string("CPU, 1 thread"));
        QVERIFY(info->backend_note.empty());
        QCOMPARE(info->n_ctx_train, 2048u);
        QCOMPARE(info->n_layer, 5u);
        QCOMPARE(info->n_vocab, 512u);
        QCOMPARE(info->shape.n_layer, 5u);
        QVERIFY(info->file_bytes > 0 && info->shape.weight_bytes > 0);
        QVERIFY(engine.has_model() && engine.model() && !engine.gpu_plan());
        // The planner sees the model on this machine.
        const MachinePlan plan = engine.plan_memory(512, 256, KvSettings{});
        QCOMPARE(plan.plan.weight_bytes, info->shape.weight_bytes);
        QVERIFY(plan.plan.kv_bytes > 0 && !plan.kv_dir.empty());
        QCOMPARE(plan.plan.layer_kinds.size(), size_t(1));
        QCOMPARE(plan.plan.layer_kinds[0].n_layers, 5u);
    }

    void loadErrorsSayWhatIsWrong() {
        Engine engine;
        Result<ModelInfo> missing = engine.load({.path = "/nonexistent/model.gguf", .backend = "cpu"});
        QVERIFY(!missing.ok());
        QVERIFY2(missing.status().message().find("/nonexistent/model.gguf") != std::string::npos, missing.status().message().c_str());
        QVERIFY(!engine.has_model());
        QCOMPARE(engine.load({.backend = "tpu"}).status().code(), StatusCode::invalid_argument);
        const Result<ModelInfo> isa = engine.load({.backend = "cpu", .cpu_isa = "neon"});
        QCOMPARE(isa.status().code(), StatusCode::invalid_argument);
        QVERIFY2(isa.status().message().find("neon") != std::string::npos, isa.status().message().c_str());
        std::stop_source stop;
        stop.request_stop();
        QCOMPARE(engine.load(kBundledOnCpu, stop.get_token()).status().code(), StatusCode::cancelled);
        QCOMPARE(engine.use_session({}).code(), StatusCode::not_found);
    }

    // --cpu-isa picks the CPU kernels; an ISA this CPU lacks falls back to the best it has.
    void theCpuIsaIsChosen() {
        Engine engine;
        QVERIFY(engine.load({.backend = "cpu", .n_threads = 1, .cpu_isa = "scalar"}).ok());
        QVERIFY2(engine.backend().name().starts_with("cpu (scalar,"), engine.backend().name().c_str());
        QVERIFY(engine.load({.backend = "cpu", .n_threads = 1, .cpu_isa = "avx512"}).ok());
        const std::string_view fallback = cpu_isa_name(resolve_cpu_isa(CpuIsa::avx512));
        QVERIFY2(engine.backend().name().find(fallback) != std::string::npos, engine.backend().name().c_str());
    }

    // Options that shape the session rebuild it; the same options keep it (and its KV).
    void theSessionIsKeptOrRebuilt() {
        Engine engine;
        QVERIFY(engine.load(kBundledOnCpu).ok());
        QCOMPARE(engine.measure({}).status().code(), StatusCode::not_found);
        SessionOptions options{.n_ctx = 256, .chunk_tokens = 64, .kv = {.prefix_cache = false}};
        QVERIFY(engine.use_session(options).ok());
        QVERIFY(engine.prefill({.turns = {{"user", "Once upon a time"}}}).ok());
        const uint32_t held = engine.snapshot().context_used;
        QVERIFY(held > 0);
        QVERIFY(engine.use_session(options).ok());
        QCOMPARE(engine.snapshot().context_used, held);  // the same session, its KV kept
        options.kv.k_bits = 8;
        QVERIFY(engine.use_session(options).ok());
        QCOMPARE(engine.snapshot().context_used, 0u);  // a new one
        QCOMPARE(engine.snapshot().context_limit, 256u);
        options.n_ctx = 100000;  // beyond the trained 2048
        const Status s = engine.use_session(options);
        QCOMPARE(s.code(), StatusCode::invalid_argument);
        QVERIFY2(s.message().find("2048") != std::string::npos, s.message().c_str());
    }

    // The memo's tokens are render_chat_tokens' tokens for every conversation shape, and the
    // document is tokenized once for all of them.
    void promptTokensAreTheWholeRender_data() {
        QTest::addColumn<QString>("model");
        for (const auto & [name, path] : m_models) QTest::newRow(qPrintable(name)) << name;
    }
    void promptTokensAreTheWholeRender() {
        QFETCH(QString, model);
        Engine engine;
        QVERIFY(engine.load({.path = m_models[model], .backend = "cpu", .n_threads = 1}).ok());
        const Model & m = *engine.model();
        PromptMemo memo;
        uint64_t whole_bytes = 0;
        for (const Conversation & c : conversations(m_long_story)) {
            for (const std::string & user : {std::string(), std::string("And then?")}) {
                for (const bool generation_prompt : {false, true}) {
                    const std::vector<chat::ChatMessage> messages = conversation_messages(c, user);
                    const PromptTokens p = memo.tokens(m, c, user, generation_prompt);
                    QCOMPARE(p.encoded.tokens, render_chat_tokens(m, messages, generation_prompt));
                    QCOMPARE(p.encoded.spans.size(), p.encoded.tokens.size());
                    whole_bytes += render_chat_text(m, messages, generation_prompt).size();
                    if (c.has_document()) QVERIFY(p.document_tokens() > 100);
                }
            }
        }
        // Three documents (two story variants, one untitled), each tokenized once.
        QCOMPARE(memo.documents_tokenized(), size_t(3));
        qInfo("%s: %llu bytes tokenized for prompts of %llu bytes", qPrintable(model), (unsigned long long)memo.bytes_tokenized(),
              (unsigned long long)whole_bytes);
        QVERIFY2(memo.bytes_tokenized() < whole_bytes / 3, qPrintable(QString::number(memo.bytes_tokenized())));
    }

    // A document read once: measure, prefill, two replies and the retention view tokenize it
    // once; the reply evaluates only the question; the spans are the document's own bytes.
    void aConversationTokenizesItsDocumentOnce_data() { promptTokensAreTheWholeRender_data(); }
    void aConversationTokenizesItsDocumentOnce() {
        QFETCH(QString, model);
        Engine engine;
        QVERIFY(engine.load({.path = m_models[model], .backend = "cpu", .n_threads = 1}).ok());
        QVERIFY(engine.use_session({.n_ctx = 2048, .chunk_tokens = 64, .kv = {.prefix_cache = false}}).ok());
        Conversation c{.document_title = "story.txt", .document_text = m_story};
        const Result<ContextMeasure> m = engine.measure(c);
        QVERIFY2(m.ok(), m.status().message().c_str());
        QVERIFY(m->fits && m->document_tokens > 100 && m->prompt_tokens > m->document_tokens);
        QCOMPARE(m->context_limit, 2048u);
        QCOMPARE(m->reserve_tokens, 512u);
        QVERIFY(engine.prefill(c).ok());
        QCOMPARE(engine.snapshot().context_used, m->prompt_tokens);

        const ReplyParams params{.generate = {.max_tokens = 4, .sampler = {.temperature = 0}}};
        for (const char * question : {"Who is in the story?", "And then?"}) {
            uint32_t evaluated = 0;
            std::string streamed;
            const Result<GenerateResult> r = engine.reply(
                c, question, params, [&](const PrefillProgress & p) { evaluated = p.n_total; },
                [&](int32_t, std::string_view piece) {
                    streamed += piece;
                    return true;
                });
            QVERIFY2(r.ok(), r.status().message().c_str());
            QVERIFY2(evaluated < 40, qPrintable(QString::number(evaluated)));
            QCOMPARE(streamed, r->text);
            c.turns.push_back({"user", question});
            c.turns.push_back({"assistant", r->text});
        }
        const DocumentRetention retention = engine.retention(c);
        QVERIFY(retention.in_context);
        QVERIFY(retention.per_position);
        QCOMPARE(retention.layer_kind, KvLayerKind::full);
        QCOMPARE(retention.spans.size(), size_t(m->document_tokens));
        QCOMPARE(retention.kept.size(), retention.spans.size());
        // The spans are the document's bytes, in order, all of them.
        std::string spelled;
        size_t at = 0;
        for (const TextSpan & s : retention.spans) {
            QVERIFY(s.begin >= at && s.end >= s.begin);
            spelled += m_story.substr(s.begin, s.size());
            at = s.end;
        }
        QCOMPARE(spelled, m_story);
        QCOMPARE(engine.documents_tokenized(), size_t(1));

        // Another document is not in the context.
        QVERIFY(!engine.retention({.document_text = "something else"}).in_context);
    }

    void aPromptThatDoesNotFitSaysWhatToDo() {
        Engine engine;
        QVERIFY(engine.load(kBundledOnCpu).ok());
        QVERIFY(engine.use_session({.n_ctx = 64, .chunk_tokens = 32}).ok());
        const Conversation c{.document_text = m_story};
        QCOMPARE(engine.prefill(c).code(), StatusCode::context_full);
        const Result<GenerateResult> r = engine.reply(c, "hi", {.when_full = "summarize it"});
        QCOMPARE(r.status().code(), StatusCode::context_full);
        QVERIFY2(r.status().message().ends_with(": summarize it"), r.status().message().c_str());
        QVERIFY(!engine.retention(c).in_context);
        const Result<ContextMeasure> m = engine.measure(c);
        QVERIFY(m.ok() && !m->fits);
    }

    void theStreamingPolicyRepliesPastTheContext() {
        Engine engine;
        QVERIFY(engine.load(kBundledOnCpu).ok());
        SessionOptions options{.n_ctx = 64, .chunk_tokens = 32};
        options.kv.policy = KvPolicy::streaming;
        QVERIFY(engine.use_session(options).ok());
        const Conversation c{.document_text = m_story};
        const Result<GenerateResult> r = engine.reply(c, "hi", {.generate = {.max_tokens = 4}});
        QVERIFY2(r.ok(), r.status().message().c_str());
        QCOMPARE(r->tokens.size(), size_t(4));
    }

    void stopDuringTheReplysPrompt() {
        Engine engine;
        QVERIFY(engine.load(kBundledOnCpu).ok());
        QVERIFY(engine.use_session({.n_ctx = 1024, .chunk_tokens = 16, .kv = {.prefix_cache = false}}).ok());
        std::stop_source stop;
        int reports = 0;
        const Result<GenerateResult> r = engine.reply(
            {.document_text = m_story}, "hi", {},
            [&](const PrefillProgress &) {
                if (++reports == 1) stop.request_stop();
            },
            {}, stop.get_token());
        QVERIFY(r.ok());
        QCOMPARE(r->reason, StopReason::cancelled);
        QCOMPARE(reports, 1);
    }

    // A template that leaves the reply inside "<think>\n" (Qwen3.5's) makes the whole reply of
    // a model that never closes the tag thinking: streamed to the thinking sink, none of it
    // answer; a past turn's thinking reaches the template as reasoning_content.
    void repliesKeepThinkingApart() {
        const std::string path = (m_dir.path() + "/thinking.gguf").toStdString();
        const std::string turns =
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
            "{% if m.reasoning_content %}[thought: {{ m.reasoning_content }}]{% endif %}<|im_end|>\n{% endfor %}";
        const std::string jinja = turns + "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
        const Status copied = copy_gguf_with_string(shared_path(QStringLiteral("models/stories260K.gguf")).toStdString(), path,
                                                    "tokenizer.chat_template", jinja);
        QVERIFY2(copied.ok(), copied.message().c_str());
        Engine engine;
        QVERIFY(engine.load({.path = path, .backend = "cpu", .n_threads = 1}).ok());
        QVERIFY(engine.use_session({.n_ctx = 512, .chunk_tokens = 64, .kv = {.prefix_cache = false}}).ok());

        std::string thought, answered;
        int tokens = 0;
        ReplyParams params{.generate = {.max_tokens = 12, .sampler = {.temperature = 0}}};
        params.thinking_sink = [&](std::string_view piece) { thought += piece; };
        Conversation c;
        const Result<GenerateResult> r = engine.reply(c, "Once upon a time", params, {}, [&](int32_t, std::string_view piece) {
            ++tokens;
            answered += piece;
            return true;
        });
        QVERIFY2(r.ok(), r.status().message().c_str());
        QCOMPARE(r->tokens.size(), size_t(12));
        QVERIFY(tokens >= 12);  // every token, with the answer's (empty) text
        QVERIFY(!r->thinking.empty());
        QCOMPARE(thought, r->thinking);
        QVERIFY(r->text.empty());
        QVERIFY(answered.empty());

        // Without the open tag the reply is all answer.
        const std::string plain = (m_dir.path() + "/plain.gguf").toStdString();
        QVERIFY(copy_gguf_with_string(path, plain, "tokenizer.chat_template",
                                      turns + "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
                    .ok());
        Engine other;
        QVERIFY(other.load({.path = plain, .backend = "cpu", .n_threads = 1}).ok());
        QVERIFY(other.use_session({.n_ctx = 512, .chunk_tokens = 64, .kv = {.prefix_cache = false}}).ok());
        thought.clear();
        const Result<GenerateResult> a = other.reply(c, "Once upon a time", params);
        QVERIFY2(a.ok(), a.status().message().c_str());
        QVERIFY(!a->text.empty());
        QVERIFY(a->thinking.empty() && thought.empty());

        c.turns = {{"user", "Hi"}, {"assistant", "Hello.", "greet back"}};
        const std::string rendered = render_chat_text(*engine.model(), conversation_messages(c), false);
        QVERIFY2(rendered.find("Hello.[thought: greet back]") != std::string::npos, rendered.c_str());
    }

    // The thinking choice reaches the template (Qwen3's enable_thinking, gpt-oss's effort,
    // before its document), and the memo's tokens are still the whole render with it.
    void theThinkingChoiceReachesTheTemplate() {
        const std::string dir = std::string(LONGREAD_SHARED_DIR) + "/models/tiny-2026/";
        Engine qwen3, oss;
        QVERIFY(qwen3.load({.path = dir + "tiny-qwen3-f32.gguf", .backend = "cpu", .n_threads = 1}).ok());
        QVERIFY(oss.load({.path = dir + "tiny-gpt-oss-f32.gguf", .backend = "cpu", .n_threads = 1}).ok());
        QVERIFY(qwen3.model_info().thinking_switch && !qwen3.model_info().reasoning_effort);
        QVERIFY(!oss.model_info().thinking_switch && oss.model_info().reasoning_effort);
        Conversation c{.document_title = "story", .document_text = m_long_story.substr(0, 2000), .turns = {}};
        const std::vector<chat::ChatMessage> messages = conversation_messages(c, "Who?");
        const std::string off = render_chat_text(*qwen3.model(), messages, true, {.enabled = false});
        QVERIFY2(off.ends_with("<think>\n\n</think>\n\n"), off.c_str());
        QVERIFY(!render_chat_text(*qwen3.model(), messages, true).ends_with("</think>\n\n"));
        QVERIFY(render_chat_text(*oss.model(), messages, true).find("Reasoning: medium") != std::string::npos);
        const std::string high = render_chat_text(*oss.model(), messages, true, {.effort = "high"});
        QVERIFY(high.find("Reasoning: high") != std::string::npos && high.find("Reasoning: high") < high.find("Document: story"));

        PromptMemo memo;
        for (const ThinkingChoice & choice : {ThinkingChoice{}, ThinkingChoice{.enabled = false, .effort = "low"}, ThinkingChoice{}}) {
            c.thinking = choice;
            for (Engine * e : {&qwen3, &oss}) {
                QCOMPARE(memo.tokens(*e->model(), c, "Who?", true).encoded.tokens, render_chat_tokens(*e->model(), messages, true, choice));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestEngine)
#include "test_engine.moc"
