// What the server sends: the OpenAI JSON shapes, server-sent events, errors, and the
// Prometheus text of /metrics.
#include <QtTest>

#include <limits>
#include <sstream>

#include "app/server/api_error.h"
#include "app/server/event_stream.h"
#include "app/server/openai_json.h"
#include "app/server/server_metrics.h"

using namespace lr;
using namespace lr::server;
using nlohmann::json;

namespace {

const ReplyIdentity kWho{"chatcmpl-1", 1700000000, "stories260K"};

// "name{labels}" -> value, for every sample line; comments must be HELP or TYPE.
std::map<std::string, double> samples(const std::string & text) {
    std::map<std::string, double> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("#")) {
            if (!line.starts_with("# HELP longread_") && !line.starts_with("# TYPE longread_")) qFatal("bad comment: %s", line.c_str());
            continue;
        }
        const size_t space = line.rfind(' ');
        if (space == std::string::npos || !line.starts_with("longread_")) qFatal("bad sample: %s", line.c_str());
        out[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return out;
}

}  // namespace

class TestServerResponses : public QObject {
    Q_OBJECT

private slots:
    void aChatCompletion() {
        const json j = chat_completion(kWho, "Hi.", "", "stop", {5, 2});
        QCOMPARE(j["object"], "chat.completion");
        QCOMPARE(j["id"], "chatcmpl-1");
        QCOMPARE(j["model"], "stories260K");
        QCOMPARE(j["choices"][0]["message"]["role"], "assistant");
        QCOMPARE(j["choices"][0]["message"]["content"], "Hi.");
        QVERIFY(!j["choices"][0]["message"].contains("reasoning_content"));
        QCOMPARE(j["choices"][0]["finish_reason"], "stop");
        QCOMPARE(j["usage"]["total_tokens"], 7);
        const json thinking = chat_completion(kWho, "4", "2+2", "length", {});
        QCOMPARE(thinking["choices"][0]["message"]["reasoning_content"], "2+2");
    }

    void logprobsInBothApisShapes() {
        const float inf = std::numeric_limits<float>::infinity();
        const std::vector<LogprobEntry> entries = {{" A", -0.5f, {{" A", -0.5f}, {" B", -1.5f}}, 0}, {"\xe2", -inf, {}, 2}};
        QVERIFY(chat_logprobs(nullptr).is_null());
        QVERIFY(text_logprobs(nullptr).is_null());

        const json chat = chat_logprobs(&entries);
        QCOMPARE(chat["content"].size(), size_t(2));
        QVERIFY(chat["refusal"].is_null());
        const json & a = chat["content"][0];
        QCOMPARE(a["token"], " A");
        QCOMPARE(a["logprob"], -0.5);
        QCOMPARE(a["bytes"], json::array({32, 65}));
        QCOMPARE(a["top_logprobs"].size(), size_t(2));
        QCOMPARE(a["top_logprobs"][1]["token"], " B");
        QCOMPARE(a["top_logprobs"][1]["logprob"], -1.5);
        QCOMPARE(a["top_logprobs"][1]["bytes"], json::array({32, 66}));
        QCOMPARE(chat["content"][1]["logprob"], -9999.0);  // JSON has no -inf: OpenAI's floor
        QCOMPARE(chat["content"][1]["bytes"], json::array({0xe2}));
        QVERIFY(dump(chat).find("\"token\":\"\xef\xbf\xbd\"") != std::string::npos);  // a lone byte as U+FFFD, no throw

        const json text = text_logprobs(&entries);
        QCOMPARE(text["tokens"], json::array({" A", "\xe2"}));
        QCOMPARE(text["token_logprobs"], json::array({-0.5, -9999.0}));
        QCOMPARE(text["top_logprobs"][0], json({{" A", -0.5}, {" B", -1.5}}));
        QCOMPARE(text["top_logprobs"][1], json::object());
        QCOMPARE(text["text_offset"], json::array({0, 2}));

        QCOMPARE(chat_completion(kWho, " A", "", "stop", {}, chat)["choices"][0]["logprobs"], chat);
        QCOMPARE(text_completion(kWho, " A", "stop", {}, text)["choices"][0]["logprobs"], text);
        QCOMPARE(chat_chunk(kWho, {{"content", " A"}}, std::nullopt, chat)["choices"][0]["logprobs"], chat);
        QCOMPARE(text_chunk(kWho, " A", std::nullopt, text)["choices"][0]["logprobs"], text);
        QVERIFY(chat_completion(kWho, " A", "", "stop", {})["choices"][0]["logprobs"].is_null());
    }

    void chunks() {
        const json first = chat_chunk(kWho, {{"role", "assistant"}}, std::nullopt);
        QCOMPARE(first["object"], "chat.completion.chunk");
        QVERIFY(first["choices"][0]["finish_reason"].is_null());
        const json last = chat_chunk(kWho, json::object(), "length");
        QCOMPARE(last["choices"][0]["finish_reason"], "length");
        QVERIFY(last["choices"][0]["delta"].empty());
        const json usage = usage_chunk(kWho, true, {3, 4});
        QVERIFY(usage["choices"].empty());
        QCOMPARE(usage["usage"]["completion_tokens"], 4);
        const json text = text_chunk(kWho, "a", std::nullopt);
        QCOMPARE(text["object"], "text_completion");
        QCOMPARE(text["choices"][0]["text"], "a");
        QCOMPARE(text_completion(kWho, "abc", "stop", {})["choices"][0]["text"], "abc");
    }

    void serverSentEvents() {
        QCOMPARE(sse_event(json{{"a", 1}}), std::string("data: {\"a\":1}\n\n"));
        QCOMPARE(std::string(kSseDone), std::string("data: [DONE]\n\n"));
        QVERIFY(kSsePing.starts_with(":"));
        // Invalid UTF-8 never breaks the stream.
        QCOMPARE(dump(json(std::string("a\xff"))), std::string("\"a\xef\xbf\xbd\""));
    }

    void anEventStreamPingsWhileItWaitsAndEndsWithDone() {
        Job job;
        job.request.include_usage = true;
        std::string sent;
        int pings = 0;
        // Nothing is queued: the first wait times out at once and pings; then the reply comes.
        const bool ended = write_event_stream(job, kWho, std::chrono::milliseconds(0), [&](std::string_view data) {
            sent += data;
            if (data == kSsePing && ++pings == 1) {
                job.channel.push({.kind = JobEvent::Kind::thinking, .text = "hmm"});
                job.channel.push({.kind = JobEvent::Kind::answer, .text = "Hi"});
                job.channel.push({.kind = JobEvent::Kind::finished, .finish_reason = "stop", .usage = {3, 1}});
            }
            return true;
        });
        QVERIFY(ended);
        QVERIFY(!job.stop.stop_requested());
        const std::vector<std::string> events = {
            sse_event(chat_chunk(kWho, {{"role", "assistant"}, {"content", ""}}, std::nullopt)),
            std::string(kSsePing),
            sse_event(chat_chunk(kWho, {{"reasoning_content", "hmm"}}, std::nullopt)),
            sse_event(chat_chunk(kWho, {{"content", "Hi"}}, std::nullopt)),
            sse_event(chat_chunk(kWho, json::object(), "stop")),
            sse_event(usage_chunk(kWho, true, {3, 1})),
            std::string(kSseDone),
        };
        std::string expected;
        for (const std::string & e : events) expected += e;
        QCOMPARE(sent, expected);
    }

    // OpenAI's shapes of tool calls: the message's (content null without text) and a
    // streamed delta's, with each call's index.
    void toolCalls() {
        const std::vector<chat::ToolCall> calls = {{"get_weather", R"({"city": "Paris"})"}, {"get_time", "{}"}};
        const json message = chat_completion(kWho, "", "", "tool_calls", {}, nullptr,
                                             tool_calls_json(calls, kWho.id))["choices"][0]["message"];
        QVERIFY(message["content"].is_null());
        QCOMPARE(message["tool_calls"].size(), size_t(2));
        QCOMPARE(message["tool_calls"][0]["id"], "call_chatcmpl-1_0");
        QCOMPARE(message["tool_calls"][0]["type"], "function");
        QCOMPARE(message["tool_calls"][0]["function"]["name"], "get_weather");
        QCOMPARE(message["tool_calls"][0]["function"]["arguments"], R"({"city": "Paris"})");  // a string, as OpenAI sends it
        QVERIFY(!message["tool_calls"][0].contains("index"));
        QCOMPARE(chat_completion(kWho, "Checking.", "", "tool_calls", {}, nullptr,
                                 tool_calls_json(calls, kWho.id))["choices"][0]["message"]["content"],
                 "Checking.");

        Job job;
        job.channel.push({.kind = JobEvent::Kind::tool_calls, .tool_calls = calls});
        job.channel.push({.kind = JobEvent::Kind::finished, .finish_reason = "tool_calls", .usage = {3, 1}});
        std::string sent;
        QVERIFY(write_event_stream(job, kWho, std::chrono::milliseconds(1000), [&](std::string_view data) {
            sent += data;
            return true;
        }));
        const std::string expected = sse_event(chat_chunk(kWho, {{"role", "assistant"}, {"content", ""}}, std::nullopt)) +
                                     sse_event(chat_chunk(kWho, {{"tool_calls", tool_calls_json(calls, kWho.id, true)}}, std::nullopt)) +
                                     sse_event(chat_chunk(kWho, json::object(), "tool_calls")) + std::string(kSseDone);
        QCOMPARE(sent, expected);
        QCOMPARE(tool_calls_json(calls, kWho.id, true)[1]["index"], 1);
    }

    void aFailedWriteStopsTheJob() {
        Job job;
        job.request.kind = CompletionKind::text;
        job.channel.push({.kind = JobEvent::Kind::answer, .text = "a"});
        QVERIFY(!write_event_stream(job, kWho, std::chrono::milliseconds(0), [](std::string_view) { return false; }));
        QVERIFY(job.stop.stop_requested());
    }

    void aFailureEndsTheStreamWithAnError() {
        Job job;
        job.request.kind = CompletionKind::text;
        job.channel.push({.kind = JobEvent::Kind::failed, .error = server_error("boom")});
        std::string sent;
        QVERIFY(write_event_stream(job, kWho, std::chrono::milliseconds(0), [&](std::string_view data) {
            sent += data;
            return true;
        }));
        QCOMPARE(sent, sse_event(to_json(server_error("boom"))));
    }

    void modelList() {
        const json j = model_list("m", 1);
        QCOMPARE(j["object"], "list");
        QCOMPARE(j["data"][0]["id"], "m");
        QCOMPARE(j["data"][0]["object"], "model");
    }

    void errorsHaveOpenAisShape() {
        ApiError e = invalid_request("bad", "temperature");
        json j = to_json(e);
        QCOMPARE(j["error"]["message"], "bad");
        QCOMPARE(j["error"]["type"], "invalid_request_error");
        QCOMPARE(j["error"]["param"], "temperature");
        QVERIFY(j["error"]["code"].is_null());
        e.code = "context_length_exceeded";
        e.extra = {{"n_ctx", 8}};
        j = to_json(e);
        QCOMPARE(j["error"]["code"], "context_length_exceeded");
        QCOMPARE(j["error"]["n_ctx"], 8);
        QVERIFY(to_json(server_error("x"))["error"]["param"].is_null());
        QCOMPARE(server_error("x").http_status, 500);
    }

    void metricsText() {
        ServerMetrics m;
        m.count_request("/v1/chat/completions", 200);
        m.count_request("/v1/chat/completions", 200);
        m.count_request("/v1/chat/completions", 400);
        m.add_tokens(10, 3);
        m.observe_time_to_first_token(0.02);
        m.observe_inter_token(0.003);
        m.observe_inter_token(3);
        KvStats kv;
        kv.tiers[0] = {.name = "device", .present = true, .used_bytes = 1024, .capacity_bytes = 4096};
        kv.block_reads = 10;
        kv.block_hits = 8;
        kv.evicted_tokens = 5;
        kv.prefix_lookups = 2;
        kv.prefix_hits = 1;
        kv.restored_tokens = 32;
        const std::map<std::string, double> s = samples(m.render({.running = 1, .queued = 2}, kv));
        QCOMPARE(s.at(R"(longread_requests_total{endpoint="/v1/chat/completions",status="200"})"), 2.0);
        QCOMPARE(s.at(R"(longread_requests_total{endpoint="/v1/chat/completions",status="400"})"), 1.0);
        QCOMPARE(s.at("longread_prompt_tokens_total"), 10.0);
        QCOMPARE(s.at("longread_generated_tokens_total"), 3.0);
        QCOMPARE(s.at(R"(longread_time_to_first_token_seconds_bucket{le="0.025"})"), 1.0);
        QCOMPARE(s.at(R"(longread_time_to_first_token_seconds_bucket{le="0.01"})"), 0.0);
        QCOMPARE(s.at(R"(longread_inter_token_latency_seconds_bucket{le="0.005"})"), 1.0);
        QCOMPARE(s.at(R"(longread_inter_token_latency_seconds_bucket{le="+Inf"})"), 2.0);
        QCOMPARE(s.at("longread_inter_token_latency_seconds_count"), 2.0);
        QCOMPARE(s.at("longread_inter_token_latency_seconds_sum"), 3.003);
        QCOMPARE(s.at("longread_sequences_running"), 1.0);
        QCOMPARE(s.at("longread_sequences_queued"), 2.0);
        QCOMPARE(s.at(R"(longread_kv_bytes_used{tier="device"})"), 1024.0);
        QCOMPARE(s.at(R"(longread_kv_bytes_capacity{tier="device"})"), 4096.0);
        QVERIFY(!s.contains(R"(longread_kv_bytes_used{tier="disk"})"));
        QCOMPARE(s.at("longread_kv_hit_rate"), 0.8);
        QCOMPARE(s.at("longread_kv_evicted_tokens_total"), 5.0);
        QCOMPARE(s.at("longread_kv_prefix_lookups_total"), 2.0);
        QCOMPARE(s.at("longread_kv_prefix_hits_total"), 1.0);
        QCOMPARE(s.at("longread_kv_restored_tokens_total"), 32.0);
    }

    // How hard the cache policy works (issue 20), with a label per policy that selected.
    void metricsCarryTheCacheMonitoring() {
        ServerMetrics m;
        KvStats kv;
        kv.tokens_written = 200;
        kv.retention_ratio = 0.25;
        kv.evictions_per_1k = 750;
        kv.refusals = 3;
        kv.selection_ms = {{"h2o", 1500}, {"snapkv", 250}};
        const std::string text = m.render({}, kv);
        const std::map<std::string, double> s = samples(text);
        QCOMPARE(s.at("longread_kv_tokens_written_total"), 200.0);
        QCOMPARE(s.at("longread_kv_retention_ratio"), 0.25);
        QCOMPARE(s.at("longread_kv_evictions_per_1k_tokens"), 750.0);
        QCOMPARE(s.at("longread_kv_refusals_total"), 3.0);
        QCOMPARE(s.at(R"(longread_kv_selection_seconds_total{policy="h2o"})"), 1.5);
        QCOMPARE(s.at(R"(longread_kv_selection_seconds_total{policy="snapkv"})"), 0.25);
        for (const char * name : {"longread_kv_retention_ratio gauge", "longread_kv_evictions_per_1k_tokens gauge",
                                  "longread_kv_refusals_total counter", "longread_kv_selection_seconds_total counter"}) {
            QVERIFY2(text.find(std::string("# TYPE ") + name + "\n") != std::string::npos, name);
        }
    }
};

QTEST_GUILESS_MAIN(TestServerResponses)
#include "test_server_responses.moc"
