// Reading OpenAI requests: every field the server honours, unknown fields, bad values,
// the `longread` object's cache settings (and the flags settings give back); stop strings;
// the API key check.
#include <QtTest>

#include "app/server/api_key.h"
#include "app/server/completion_request.h"
#include "app/server/kv_request_settings.h"
#include "app/server/stop_matcher.h"

using namespace lr;
using namespace lr::server;

namespace {

std::variant<CompletionRequest, ApiError> chat(const std::string & body, const RequestDefaults & defaults = {}) {
    return parse_completion_request(CompletionKind::chat, body, defaults);
}

std::variant<CompletionRequest, ApiError> text(const std::string & body, const RequestDefaults & defaults = {}) {
    return parse_completion_request(CompletionKind::text, body, defaults);
}

const std::string kHello = R"("messages":[{"role":"user","content":"hello"}])";

CompletionRequest ok(const std::variant<CompletionRequest, ApiError> & r) {
    if (const auto * e = std::get_if<ApiError>(&r)) qFatal("unexpected error: %s", e->message.c_str());
    return std::get<CompletionRequest>(r);
}

ApiError refused(const std::variant<CompletionRequest, ApiError> & r) {
    if (!std::holds_alternative<ApiError>(r)) qFatal("the request was accepted");
    return std::get<ApiError>(r);
}

}  // namespace

Q_DECLARE_METATYPE(lr::KvSettings)

class TestServerRequests : public QObject {
    Q_OBJECT

private slots:
    void aChatRequestSplitsItsLastUserMessage() {
        const CompletionRequest r = ok(chat(R"({"model":"x","messages":[
            {"role":"system","content":"be brief"},
            {"role":"developer","content":"really"},
            {"role":"user","content":"hi"},
            {"role":"assistant","content":"hello","reasoning_content":"greet"},
            {"role":"user","content":[{"type":"text","text":"how "},{"type":"text","text":"are you"}]}]})"));
        QCOMPARE(r.kind, CompletionKind::chat);
        QCOMPARE(r.user_text, std::string("how are you"));
        QCOMPARE(r.conversation.turns.size(), size_t(4));
        QCOMPARE(r.conversation.turns[1].role, std::string("system"));
        QCOMPARE(r.conversation.turns[3].thinking, std::string("greet"));
        QVERIFY(!r.stream);
        QCOMPARE(r.generate.max_tokens, 0);  // until the reply ends
    }

    void badMessagesNameTheField() {
        QCOMPARE(refused(chat(R"({})")).param, std::string("messages"));
        QCOMPARE(refused(chat(R"({"messages":[]})")).param, std::string("messages"));
        QCOMPARE(refused(chat(R"({"messages":[{"role":"function","content":"x"}]})")).param, std::string("messages[0].role"));
        QCOMPARE(refused(chat(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})")).param,
                 std::string("messages[0].content"));
        // A part whose type is not a string threw, and the server answered 500.
        QCOMPARE(refused(chat(R"({"messages":[{"role":"user","content":[{"type":5,"text":"x"}]}]})")).param,
                 std::string("messages[0].content"));
        QCOMPARE(refused(chat(R"({"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]})")).param,
                 std::string("messages"));
    }

    void samplingFieldsAndTheirDefaults() {
        RequestDefaults defaults;
        defaults.sampler.top_k = 7;
        const CompletionRequest r = ok(chat(R"({)" + kHello + R"(,"temperature":0,"top_p":0.5,"seed":42,
            "presence_penalty":1.5,"frequency_penalty":-0.5,"max_tokens":9})",
                                            defaults));
        QCOMPARE(r.generate.sampler.temperature, 0.0f);
        QCOMPARE(r.generate.sampler.top_p, 0.5f);
        QCOMPARE(r.generate.sampler.seed, uint64_t(42));
        QCOMPARE(r.generate.sampler.presence_penalty, 1.5f);
        QCOMPARE(r.generate.sampler.frequency_penalty, -0.5f);
        QCOMPARE(r.generate.sampler.top_k, 7);  // the server's flag
        QCOMPARE(r.generate.max_tokens, 9);
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"max_tokens":9,"max_completion_tokens":5})")).generate.max_tokens, 5);
        QCOMPARE(ok(text(R"({"prompt":"x"})")).generate.max_tokens, 16);  // OpenAI's default for completions
    }

    void badValuesAre400sNamingTheField() {
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"temperature":3})")).param, std::string("temperature"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"temperature":"hot"})")).param, std::string("temperature"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"top_p":1.5})")).param, std::string("top_p"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"max_tokens":0})")).param, std::string("max_tokens"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"max_tokens":1.5})")).param, std::string("max_tokens"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"presence_penalty":9})")).param, std::string("presence_penalty"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"stream":"yes"})")).param, std::string("stream"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"n":2})")).param, std::string("n"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"stop":[1]})")).param, std::string("stop"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"stream_options":{"include_usage":1}})")).param,
                 std::string("stream_options.include_usage"));
        QCOMPARE(refused(text(R"({"prompt":5})")).param, std::string("prompt"));
    }

    void malformedJsonIsA400() {
        const ApiError e = refused(chat("{\"messages\": ["));
        QCOMPARE(e.http_status, 400);
        QCOMPARE(e.type, std::string("invalid_request_error"));
        QCOMPARE(refused(chat("[1,2]")).http_status, 400);
        QCOMPARE(refused(chat("")).http_status, 400);
    }

    void unknownFieldsAreIgnored() {
        const CompletionRequest r = ok(
            chat(R"({)" + kHello + R"(,"logit_bias":{},"user":"u","tools":[],"response_format":{"type":"text"},"whatever":null})"));
        QCOMPARE(r.user_text, std::string("hello"));
    }

    // Fields that would change what the reply is, which the server does not do, are 400s
    // naming them: a client must not get a reply that quietly ignored them.
    void whatTheServerCannotDoIsRefused() {
        const std::string tool = R"([{"type":"function","function":{"name":"f","parameters":{}}}])";
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"tools":)" + tool + R"(,"tool_choice":"required"})")).param,
                 std::string("tool_choice"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"tools":)" + tool + R"(,"tool_choice":{"type":"function"}})")).param,
                 std::string("tool_choice"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"functions":[{"name":"f"}]})")).param, std::string("functions"));
        for (const char * format : {R"({"type":"json_object"})", R"({"type":"json_schema","json_schema":{"name":"x","schema":{}}})", "5"}) {
            const ApiError e = refused(chat(R"({)" + kHello + R"(,"response_format":)" + format + "}"));
            QCOMPARE(e.param, std::string("response_format"));
            QCOMPARE(e.http_status, 400);
        }
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"logit_bias":{"1":2}})")).param, std::string("logit_bias"));
        QCOMPARE(refused(text(R"({"prompt":"x","echo":true})")).param, std::string("echo"));
        QCOMPARE(refused(text(R"({"prompt":"x","suffix":"end"})")).param, std::string("suffix"));
        QCOMPARE(refused(text(R"({"prompt":"x","best_of":3})")).param, std::string("best_of"));
        ok(text(R"({"prompt":"x","echo":false,"suffix":"","best_of":1})"));
    }

    // Tools go to the template as JSON (tool_choice none: not at all); an assistant's calls
    // get their arguments as objects; a tool's result may end the messages.
    void toolsAndTheMessagesOfACall() {
        const std::string tool = R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
        const CompletionRequest offered = ok(chat(R"({)" + kHello + R"(,"tools":)" + tool + R"(,"tool_choice":"auto"})"));
        QCOMPARE(nlohmann::json::parse(offered.conversation.tools), nlohmann::json::parse(tool));
        QVERIFY(ok(chat(R"({)" + kHello + R"(,"tools":)" + tool + R"(,"tool_choice":"none"})")).conversation.tools.empty());
        QVERIFY(ok(chat(R"({)" + kHello + R"(,"tools":[]})")).conversation.tools.empty());
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"tools":{"a":1}})")).param, std::string("tools"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"tools":[{"type":"function"}]})")).param, std::string("tools[0]"));

        nlohmann::json body = {{"tools", nlohmann::json::parse(tool)}};
        body["messages"] = {
            {{"role", "user"}, {"content", "Weather in Paris?"}},
            {{"role", "assistant"},
             {"content", nullptr},
             {"tool_calls",
              {{{"id", "call_1"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
            {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C"}}};
        const CompletionRequest r = ok(chat(body.dump()));
        QVERIFY(r.user_text.empty());  // the tool's result ends the messages: all of them are the conversation
        QCOMPARE(r.conversation.turns.size(), size_t(3));
        const nlohmann::json calls = nlohmann::json::parse(r.conversation.turns[1].tool_calls);
        QCOMPARE(calls[0]["function"]["arguments"], nlohmann::json({{"city", "Paris"}}));  // an object for the template
        QCOMPARE(r.conversation.turns[2].role, std::string("tool"));
        QCOMPARE(r.conversation.turns[2].tool_call_id, std::string("call_1"));
        QCOMPARE(r.conversation.turns[2].text, std::string("18 C"));
        QCOMPARE(refused(chat(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":5}]})")).param,
                 std::string("messages[1].tool_calls"));
        QCOMPARE(refused(chat(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{}}]}]})")).param,
                 std::string("messages[1].tool_calls"));
    }

    void logprobsFields() {
        QCOMPARE(ok(chat(R"({)" + kHello + "}")).generate.logprobs, -1);
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"logprobs":false})")).generate.logprobs, -1);
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"logprobs":true})")).generate.logprobs, 0);
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"logprobs":true,"top_logprobs":20})")).generate.logprobs, 20);
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"top_logprobs":2})")).param, std::string("top_logprobs"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"logprobs":true,"top_logprobs":21})")).param, std::string("top_logprobs"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"logprobs":3})")).param, std::string("logprobs"));  // chat's is true or false
        QCOMPARE(ok(text(R"({"prompt":"x","logprobs":3})")).generate.logprobs, 3);                      // the completions API's is a count
        QCOMPARE(ok(text(R"({"prompt":"x","logprobs":0})")).generate.logprobs, 0);
        QCOMPARE(refused(text(R"({"prompt":"x","logprobs":true})")).param, std::string("logprobs"));
        QCOMPARE(refused(text(R"({"prompt":"x","logprobs":-1})")).param, std::string("logprobs"));
    }

    void theThinkingChoice() {
        QCOMPARE(ok(chat(R"({)" + kHello + "}")).conversation.thinking, ThinkingChoice{});
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"reasoning_effort":"high"})")).conversation.thinking, (ThinkingChoice{.effort = "high"}));
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"reasoning_effort":"minimal"})")).conversation.thinking, (ThinkingChoice{.effort = "low"}));
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"reasoning_effort":"none"})")).conversation.thinking,
                 (ThinkingChoice{.enabled = false, .effort = "low"}));
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"chat_template_kwargs":{"enable_thinking":false}})")).conversation.thinking,
                 (ThinkingChoice{.enabled = false}));
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"chat_template_kwargs":{"enable_thinking":true,"reasoning_effort":"medium"}})"))
                     .conversation.thinking,
                 (ThinkingChoice{.enabled = true, .effort = "medium"}));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"reasoning_effort":"max"})")).param, std::string("reasoning_effort"));
        // The server's flags (serve --thinking, --reasoning-effort) are the defaults a request overrides.
        const RequestDefaults defaults{.thinking = {.enabled = false, .effort = "high"}};
        QCOMPARE(ok(chat(R"({)" + kHello + "}", defaults)).conversation.thinking, defaults.thinking);
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"chat_template_kwargs":{"enable_thinking":true}})", defaults)).conversation.thinking,
                 (ThinkingChoice{.enabled = true, .effort = "high"}));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"chat_template_kwargs":{"enable_thinking":"no"}})")).param,
                 std::string("chat_template_kwargs.enable_thinking"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"chat_template_kwargs":{"tools_in_user":true}})")).param,
                 std::string("chat_template_kwargs.tools_in_user"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"chat_template_kwargs":[1]})")).param, std::string("chat_template_kwargs"));
    }

    void llamaCppsSamplingFields() {
        const CompletionRequest r = ok(chat(R"({)" + kHello + R"(,"top_k":5,"min_p":0.1,"repeat_penalty":1.1,"repeat_last_n":32})"));
        QCOMPARE(r.generate.sampler.top_k, 5);
        QCOMPARE(r.generate.sampler.min_p, 0.1f);
        QCOMPARE(r.generate.sampler.repeat_penalty, 1.1f);
        QCOMPARE(r.generate.sampler.repeat_last_n, 32);
        for (const char * bad : {R"("top_k":-1)", R"("min_p":2)", R"("repeat_penalty":0)", R"("repeat_last_n":-5)"}) {
            const ApiError e = refused(chat(R"({)" + kHello + "," + bad + "}"));
            QCOMPARE(e.http_status, 400);
            const std::string field = std::string(bad).substr(1, std::string(bad).find('"', 1) - 1);
            QVERIFY2(e.message.find(field) != std::string::npos, e.message.c_str());
        }
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"top_k":"many"})")).param, std::string("top_k"));
    }

    void streamStopAndUsage() {
        const CompletionRequest r = ok(chat(R"({)" + kHello + R"(,"stream":true,"stream_options":{"include_usage":true},"stop":"\n"})"));
        QVERIFY(r.stream);
        QVERIFY(r.include_usage);
        QCOMPARE(r.stop, std::vector<std::string>{"\n"});
        QCOMPARE(ok(text(R"({"prompt":["x"],"stop":["a","bc"]})")).stop, (std::vector<std::string>{"a", "bc"}));
        QVERIFY(ok(text(R"({"prompt":"x","stop":null})")).stop.empty());
    }

    void theLongreadObjectSetsTheCachePolicy() {
        const CompletionRequest r = ok(
            chat(R"({)" + kHello + R"(,"longread":{"kv_policy":"h2o","keep_ratio":0.25,"k_bits":8,"sink_tokens":"2"}})"));
        QCOMPARE(r.kv.policy, KvPolicy::h2o);
        QCOMPARE(r.kv.keep_ratio, 0.25);
        QCOMPARE(r.kv.k_bits, 8u);
        QCOMPARE(r.kv.sink_tokens, 2u);
        QCOMPARE(ok(chat(R"({)" + kHello + R"(,"longread":{"kv_k_bits":4}})")).kv.k_bits, 4u);
        const CompletionRequest h2o = ok(chat(R"({)" + kHello + R"(,"longread":{"h2o_keep_ratio":0.3}})"));
        QCOMPARE(h2o.kv.policy, KvPolicy::h2o);
        QCOMPARE(h2o.kv.keep_ratio, 0.3);
    }

    void theServersFlagsAreTheDefaults() {
        const RequestDefaults defaults{.kv_flags = {{"--kv-policy", "snapkv"}, {"--keep-ratio", "0.5"}}};
        const CompletionRequest r = ok(chat(R"({)" + kHello + "}", defaults));
        QCOMPARE(r.kv.policy, KvPolicy::snapkv);
        QCOMPARE(r.kv.keep_ratio, 0.5);
        const CompletionRequest over = ok(chat(R"({)" + kHello + R"(,"longread":{"keep_ratio":0.1}})", defaults));
        QCOMPARE(over.kv.policy, KvPolicy::snapkv);
        QCOMPARE(over.kv.keep_ratio, 0.1);
        QCOMPARE(ok(chat(R"({)" + kHello + "}")).kv.policy, KvPolicy::none);
    }

    void settingsGiveTheirFlagsBack_data() {
        QTest::addColumn<KvSettings>("settings");
        QTest::newRow("defaults") << KvSettings{};
        QTest::newRow("h2o") << KvSettings{.policy = KvPolicy::h2o, .keep_ratio = 0.35, .recent_ratio = 0.25, .sink_tokens = 8};
        QTest::newRow("snapkv then h2o") << KvSettings{.policy = KvPolicy::snapkv,
                                                       .budget_tokens = 300,
                                                       .obs_window = 16,
                                                       .then = KvPolicy::h2o};
        QTest::newRow("quest") << KvSettings{.policy = KvPolicy::quest, .quest_page = 16, .quest_pages = 12};
        QTest::newRow("pyramid layers") << KvSettings{.policy = KvPolicy::h2o, .layer_budget = KvLayerBudget::pyramid};
        QTest::newRow("codecs and tiers") << KvSettings{.device_mib = 12.5,
                                                        .host_mib = 64,
                                                        .disk_mib = 1024,
                                                        .dir = "/tmp/kv",
                                                        .prefix_cache = false,
                                                        .k_bits = 8,
                                                        .v_bits = 4,
                                                        .residual_tokens = 64,
                                                        .host_bits = 8,
                                                        .disk_bits = 4,
                                                        .block_tokens = 16};
        QTest::newRow("warm-up") << KvSettings{.policy = KvPolicy::h2o, .warmup_tokens = 128};
    }
    // The desktop app's cache settings become the server's defaults through these flags.
    void settingsGiveTheirFlagsBack() {
        QFETCH(KvSettings, settings);
        const auto back = kv_settings_for_request(kv_flags_for(settings), nullptr);
        if (const auto * e = std::get_if<ApiError>(&back)) QFAIL(e->message.c_str());
        QCOMPARE(describe(std::get<KvSettings>(back)), describe(settings));
        const KvSettings & k = std::get<KvSettings>(back);
        QCOMPARE(k.keep_ratio, settings.keep_ratio);
        QCOMPARE(k.budget_tokens, settings.budget_tokens);
        QCOMPARE(k.recent_ratio, settings.recent_ratio);
        QCOMPARE(k.obs_window, settings.obs_window);
        QCOMPARE(k.then, settings.then);
        QCOMPARE(k.quest_pages, settings.quest_pages);
        QCOMPARE(k.residual_tokens, settings.residual_tokens);
        QCOMPARE(k.device_mib, settings.device_mib);
        QCOMPARE(k.host_mib, settings.host_mib);
        QCOMPARE(k.disk_mib, settings.disk_mib);
        QCOMPARE(k.dir, settings.dir);
        QCOMPARE(k.prefix_cache, settings.prefix_cache);
        QCOMPARE(k.host_bits, settings.host_bits);
        QCOMPARE(k.disk_bits, settings.disk_bits);
        QCOMPARE(k.block_tokens, settings.block_tokens);
        QCOMPARE(k.k_bits, settings.k_bits);
        QCOMPARE(k.v_bits, settings.v_bits);
        QCOMPARE(k.warmup_tokens, settings.warmup_tokens);
        QCOMPARE(k.layer_budget, settings.layer_budget);
    }

    void badCacheSettingsNameTheSetting() {
        ApiError e = refused(chat(R"({)" + kHello + R"(,"longread":{"keep_ratio":2}})"));
        QCOMPARE(e.http_status, 400);
        QCOMPARE(e.param, std::string("longread.keep_ratio"));
        QVERIFY2(e.message.find("longread.keep_ratio") != std::string::npos, e.message.c_str());
        e = refused(chat(R"({)" + kHello + R"(,"longread":{"kv_policy":"lru"}})"));
        QCOMPARE(e.param, std::string("longread.kv_policy"));
        QVERIFY2(e.message.find("lru") != std::string::npos, e.message.c_str());
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"longread":{"k_bits":true}})")).param, std::string("longread.k_bits"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"longread":{"colour":"red"}})")).param, std::string("longread.colour"));
        // Server-wide settings are not per request.
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"longread":{"kv_dir":"/tmp"}})")).param, std::string("longread.kv_dir"));
        QCOMPARE(refused(chat(R"({)" + kHello + R"(,"longread":[1]})")).param, std::string("longread"));
    }

    void stopStringsAreNeverSent() {
        StopMatcher m({"END", ""});
        QCOMPARE(m.feed("hello E"), std::string("hello "));
        QCOMPARE(m.feed("N"), std::string());
        QCOMPARE(m.feed("X"), std::string("ENX"));
        QCOMPARE(m.feed(" fin EN"), std::string(" fin "));
        QCOMPARE(m.feed("D and more"), std::string());
        QVERIFY(m.stopped());
        QCOMPARE(m.feed("more"), std::string());
        QCOMPARE(m.flush(), std::string());

        StopMatcher earliest({"cd", "b"});
        QCOMPARE(earliest.feed("abcd"), std::string("a"));
        StopMatcher none({});
        QCOMPARE(none.feed("abc"), std::string("abc"));
        StopMatcher tail({"xyz"});
        QCOMPARE(tail.feed("axy"), std::string("a"));
        QCOMPARE(tail.flush(), std::string("xy"));
    }

    void theApiKeyIsComparedWhole() {
        QVERIFY(constant_time_equals("secret", "secret"));
        QVERIFY(!constant_time_equals("secreT", "secret"));
        QVERIFY(!constant_time_equals("secre", "secret"));
        QVERIFY(!constant_time_equals("secrets", "secret"));
        QVERIFY(!constant_time_equals("", "secret"));
        QVERIFY(authorized("Bearer secret", "secret"));
        QVERIFY(!authorized("Bearer wrong", "secret"));
        QVERIFY(!authorized("secret", "secret"));
        QVERIFY(!authorized("", "secret"));
        QVERIFY(authorized("", ""));
    }
};

QTEST_GUILESS_MAIN(TestServerRequests)
#include "test_server_requests.moc"
