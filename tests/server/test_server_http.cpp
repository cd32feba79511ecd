// The server end to end over loopback HTTP with the bundled model: every endpoint,
// streaming against non-streaming, stop strings, logprobs against a Session's logits,
// context overflow, bad input, the API key, an aborted stream, keep-alive after a stream,
// and /metrics.
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "app/server/generation_queue.h"
#include "app/server/http_routes.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/session.h"
#include "support/gguf_copy.h"

using namespace lr;
using namespace lr::server;
using nlohmann::json;

namespace {

const std::string kModel = std::string(LONGREAD_SHARED_DIR) + "/models/stories260K.gguf";
const std::string kKey = "test-key-0123456789";
constexpr uint32_t kContext = 256;

struct StreamResult {
    int status = 0;
    std::vector<json> chunks;  // the data: events before [DONE]
    bool done = false;         // ended with data: [DONE]
    std::string raw;
};

// The content of the events' deltas (chat) or texts (completions).
std::string streamed_text(const StreamResult & r) {
    std::string out;
    for (const json & c : r.chunks) {
        if (c["choices"].empty()) continue;
        const json & choice = c["choices"][0];
        if (choice.contains("delta")) out += choice["delta"].value("content", "");
        else out += choice.value("text", "");
    }
    return out;
}

StreamResult parse_stream(int status, const std::string & raw) {
    StreamResult r{.status = status, .raw = raw};
    std::istringstream in(raw);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.starts_with("data: ")) continue;
        const std::string data = line.substr(6);
        if (data == "[DONE]") {
            r.done = true;
            continue;
        }
        r.chunks.push_back(json::parse(data));
    }
    return r;
}

// One HTTP/1.1 request on an open socket; returns the whole response (headers and body,
// the body read to its end: Content-Length or the last chunk).
std::string round_trip(int fd, const std::string & request) {
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) return {};
    std::string in;
    char buf[4096];
    for (;;) {
        const size_t head_end = in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
            const std::string head = in.substr(0, head_end);
            if (head.find("Transfer-Encoding: chunked") != std::string::npos) {
                if (in.find("\r\n0\r\n\r\n", head_end) != std::string::npos) return in;
            } else if (const size_t cl = head.find("Content-Length: "); cl != std::string::npos) {
                if (in.size() >= head_end + 4 + std::stoul(head.substr(cl + 16))) return in;
            }
        }
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return {};  // the server closed the connection
        in.append(buf, size_t(n));
    }
}

}  // namespace

class TestServerHttp : public QObject {
    Q_OBJECT

    Engine m_engine;
    std::unique_ptr<ServerMetrics> m_metrics;
    std::unique_ptr<GenerationQueue> m_queue;
    std::unique_ptr<HttpRoutes> m_routes;
    std::thread m_listener;
    int m_port = 0;

    httplib::Client client(bool with_key = true) const {
        httplib::Client c("127.0.0.1", m_port);
        if (with_key) c.set_bearer_token_auth(kKey);
        return c;
    }

    std::pair<int, json> post(const std::string & path, const json & body) const {
        auto r = client().Post(path, body.dump(), "application/json");
        if (!r) qFatal("no response from %s", path.c_str());
        return {r->status, json::parse(r->body)};
    }

    StreamResult post_stream(const std::string & path, json body) const {
        body["stream"] = true;
        auto r = client().Post(path, body.dump(), "application/json");
        if (!r) qFatal("no response from %s", path.c_str());
        return parse_stream(r->status, r->body);
    }

    static json chat_body(const std::string & text, int max_tokens) {
        return {{"model", "anything"},
                {"messages", {{{"role", "user"}, {"content", text}}}},
                {"temperature", 0},
                {"max_tokens", max_tokens}};
    }

    double metric(const std::string & name) const {
        auto r = client().Get("/metrics");
        if (!r || r->status != 200) qFatal("no metrics");
        std::istringstream in(r->body);
        std::string line;
        while (std::getline(in, line)) {
            if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
        }
        return -1;
    }

private slots:
    void initTestCase() {
        std::signal(SIGPIPE, SIG_IGN);
        QVERIFY(m_engine.load({.path = kModel, .backend = "cpu", .n_threads = 1}).ok());
        SessionOptions options{.n_ctx = kContext, .chunk_tokens = 64};
        options.kv.prefix_cache = false;
        m_metrics = std::make_unique<ServerMetrics>();
        auto queue = GenerationQueue::create(m_engine.model(), options, 4, *m_metrics);
        QVERIFY2(queue.ok(), queue.status().message().c_str());
        m_queue = std::move(*queue);
        m_routes = std::make_unique<HttpRoutes>(HttpOptions{.model_id = "stories260K", .api_key = kKey},
                                                RequestDefaults{.kv_flags = {{"--no-prefix-cache", ""}}}, *m_queue, *m_metrics);
        m_port = m_routes->bind_to_any_port("127.0.0.1");
        QVERIFY(m_port > 0);
        m_listener = std::thread([this] { m_routes->listen(); });
        while (!m_routes->running()) std::this_thread::yield();
    }

    void cleanupTestCase() {
        m_routes->stop();
        m_listener.join();
        m_routes.reset();
        m_queue.reset();
    }

    void healthAndModels() {
        auto health = client(false).Get("/health");
        QVERIFY(health);
        QCOMPARE(health->status, 200);
        QCOMPARE(json::parse(health->body)["status"], "ok");
        auto models = client().Get("/v1/models");
        QVERIFY(models);
        QCOMPARE(models->status, 200);
        QCOMPARE(json::parse(models->body)["data"][0]["id"], "stories260K");
        QVERIFY(!models->has_header("Access-Control-Allow-Origin"));  // no CORS unless asked
    }

    void aWrongKeyIs401() {
        for (const char * key : {"", "wrong", "test-key-012345678"}) {
            httplib::Client c = client(false);
            if (*key) c.set_bearer_token_auth(key);
            auto r = c.Get("/v1/models");
            QVERIFY(r);
            QCOMPARE(r->status, 401);
            QCOMPARE(json::parse(r->body)["error"]["type"], "authentication_error");
        }
        auto r = client(false).Post("/v1/chat/completions", chat_body("hi", 2).dump(), "application/json");
        QCOMPARE(r->status, 401);
    }

    void chatStreamingMatchesNonStreaming() {
        const json body = chat_body("Once upon a time", 40);
        const auto [status, whole] = post("/v1/chat/completions", body);
        QCOMPARE(status, 200);
        QCOMPARE(whole["object"], "chat.completion");
        const std::string text = whole["choices"][0]["message"]["content"];
        QVERIFY(!text.empty());
        QCOMPARE(whole["usage"]["completion_tokens"], 40);
        QCOMPARE(whole["choices"][0]["finish_reason"], "length");

        json stream_body = body;
        stream_body["stream_options"] = {{"include_usage", true}};
        const StreamResult s = post_stream("/v1/chat/completions", stream_body);
        QCOMPARE(s.status, 200);
        QVERIFY(s.done);
        QCOMPARE(streamed_text(s), text);
        QCOMPARE(s.chunks.front()["choices"][0]["delta"]["role"], "assistant");
        const json & usage = s.chunks.back();
        QVERIFY(usage["choices"].empty());
        QCOMPARE(usage["usage"], whole["usage"]);
        QCOMPARE(s.chunks[s.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
        for (const json & c : s.chunks) QCOMPARE(c["object"], "chat.completion.chunk");
        // Without include_usage there is no usage chunk.
        const StreamResult plain = post_stream("/v1/chat/completions", body);
        QVERIFY(!plain.chunks.back()["choices"].empty());
    }

    // Four streams at once (the server runs up to 4 together): each gets what it gets alone.
    void parallelStreamsMatchTheirSequentialResults() {
        const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily and Tom went", "One day, a bird"};
        std::vector<std::string> alone;
        for (const std::string & p : prompts) {
            const auto [status, whole] = post("/v1/chat/completions", chat_body(p, 48));
            QCOMPARE(status, 200);
            alone.push_back(whole["choices"][0]["message"]["content"]);
        }
        std::vector<StreamResult> together(prompts.size());
        std::vector<std::thread> clients;
        for (size_t i = 0; i < prompts.size(); ++i) {
            clients.emplace_back([&, i] { together[i] = post_stream("/v1/chat/completions", chat_body(prompts[i], 48)); });
        }
        for (std::thread & t : clients) t.join();
        for (size_t i = 0; i < prompts.size(); ++i) {
            QCOMPARE(together[i].status, 200);
            QVERIFY(together[i].done);
            QCOMPARE(streamed_text(together[i]), alone[i]);
        }
    }

    void completionsStreamingMatchesNonStreaming() {
        const json body = {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 30}};
        const auto [status, whole] = post("/v1/completions", body);
        QCOMPARE(status, 200);
        QCOMPARE(whole["object"], "text_completion");
        const std::string text = whole["choices"][0]["text"];
        QVERIFY(!text.empty());
        const StreamResult s = post_stream("/v1/completions", body);
        QVERIFY(s.done);
        QCOMPARE(streamed_text(s), text);
    }

    void stopSequences() {
        const json body = {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 30}};
        const std::string text = post("/v1/completions", body).second["choices"][0]["text"];
        const size_t cut = text.find(' ', text.size() / 2);
        QVERIFY(cut != std::string::npos);
        const std::string stop = text.substr(cut, 4);
        for (const json & stops : {json(stop), json::array({"never there", stop})}) {
            json with_stop = body;
            with_stop["stop"] = stops;
            const json r = post("/v1/completions", with_stop).second;
            QCOMPARE(r["choices"][0]["text"].get<std::string>(), text.substr(0, text.find(stop)));
            QCOMPARE(r["choices"][0]["finish_reason"], "stop");
            const StreamResult s = post_stream("/v1/completions", with_stop);
            QCOMPARE(streamed_text(s), text.substr(0, text.find(stop)));
        }
    }

    // Each token's logprob is the log softmax of the model's logits at its place (a Session
    // evaluates them again, greedily), the top list leads with the greedy choice, the tokens
    // spell the text at their offsets, streaming sends the same entries, and a stop string
    // drops the tokens after it.
    void logprobsAreTheModelsDistribution() {
        const std::string prompt = "Once upon a time";
        const json body = {{"prompt", prompt}, {"temperature", 0}, {"max_tokens", 12}, {"logprobs", 3}};
        const auto [status, whole] = post("/v1/completions", body);
        QCOMPARE(status, 200);
        const json lp = whole["choices"][0]["logprobs"];
        const std::string text = whole["choices"][0]["text"];
        QCOMPARE(lp["tokens"].size(), size_t(12));

        SessionConfig config{.n_ctx = kContext, .chunk_tokens = 64};
        config.kv.prefix_cache = false;
        auto session = Session::create(m_engine.model(), config);
        QVERIFY(session.ok());
        const Tokenizer & tokenizer = m_engine.model()->tokenizer();
        std::vector<int32_t> next = tokenizer.encode(prompt, true, false);
        std::string spelled;
        for (size_t i = 0; i < 12; ++i) {
            QVERIFY((*session)->append(next).ok());
            const std::span<const float> logits = (*session)->logits();
            const int32_t greedy = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
            const float max = logits[size_t(greedy)];
            double sum = 0;
            for (const float x : logits) sum += std::exp(double(x - max));
            const double expected = -std::log(sum);  // log softmax of the greedy token
            const std::string token = lp["tokens"][i];
            QCOMPARE(token, tokenizer.token_to_piece(greedy, true));
            QVERIFY2(std::abs(lp["token_logprobs"][i].get<double>() - expected) < 1e-4,
                     qPrintable(QString("token %1: %2 vs %3").arg(i).arg(lp["token_logprobs"][i].get<double>()).arg(expected)));
            QCOMPARE(lp["top_logprobs"][i].size(), size_t(3));
            for (const auto & [alternative, logprob] : lp["top_logprobs"][i].items())
                QVERIFY(logprob.get<double>() <= lp["token_logprobs"][i].get<double>());
            QCOMPARE(lp["text_offset"][i].get<size_t>(), spelled.size());
            spelled += token;
            next = {greedy};
        }
        QCOMPARE(spelled, text);

        const StreamResult s = post_stream("/v1/completions", body);
        json streamed = json::array();
        for (const json & c : s.chunks) {
            const json & l = c["choices"][0]["logprobs"];
            if (!l.is_null()) {
                for (const json & t : l["tokens"]) streamed.push_back(t);
            }
        }
        QCOMPARE(streamed, lp["tokens"]);

        // A stop string: the tokens whose text starts before it, and none after.
        const size_t cut = text.find(' ', 3);
        QVERIFY(cut != std::string::npos);
        json with_stop = body;
        with_stop["stop"] = text.substr(cut, 3);
        const json stopped = post("/v1/completions", with_stop).second["choices"][0];
        QCOMPARE(stopped["text"].get<std::string>(), text.substr(0, cut));
        size_t before = 0;
        while (before < 12 && lp["text_offset"][before].get<size_t>() < cut) ++before;
        QCOMPARE(stopped["logprobs"]["tokens"].size(), before);

        // Chat: one entry per generated token, spelling the content.
        json chat = chat_body(prompt, 6);
        chat["logprobs"] = true;
        chat["top_logprobs"] = 2;
        const json reply = post("/v1/chat/completions", chat).second["choices"][0];
        std::string content;
        for (const json & t : reply["logprobs"]["content"]) {
            content += t["token"].get<std::string>();
            QCOMPARE(t["top_logprobs"].size(), size_t(2));
            QCOMPARE(t["top_logprobs"][0]["token"], t["token"]);  // greedy
        }
        QCOMPARE(reply["logprobs"]["content"].size(), size_t(6));
        QCOMPARE(content, reply["message"]["content"].get<std::string>());
        QVERIFY(post("/v1/chat/completions", chat_body(prompt, 2)).second["choices"][0]["logprobs"].is_null());  // not asked for
    }

    // A thinking model's thinking tokens carry no logprobs (they are not the content):
    // tiny-qwen35's template opens the thinking, and its random weights never close it;
    // chat_template_kwargs.enable_thinking false turns it off.
    void thinkingTokensHaveNoLogprobsAndCanBeOff() {
        Engine engine;
        QVERIFY(
            engine
                .load(
                    {.path = std::string(LONGREAD_SHARED_DIR) + "/models/tiny-2026/tiny-qwen35-f32.gguf", .backend = "cpu", .n_threads = 1})
                .ok());
        ServerMetrics metrics;
        SessionOptions options{.n_ctx = kContext, .chunk_tokens = 64};
        options.kv.prefix_cache = false;
        auto queue = GenerationQueue::create(engine.model(), options, 1, metrics);
        QVERIFY(queue.ok());
        auto request = parse_completion_request(CompletionKind::chat, chat_body("Hi", 10).dump(), {});
        std::get<CompletionRequest>(request).generate.logprobs = 1;
        const std::shared_ptr<Job> job = (*queue)->submit(std::get<CompletionRequest>(request));
        std::string thinking;
        size_t entries = 0;
        for (;;) {
            const std::optional<JobEvent> e = job->channel.next(std::chrono::minutes(5));
            QVERIFY(e);
            QVERIFY(e->kind != JobEvent::Kind::failed && e->kind != JobEvent::Kind::rejected);
            if (e->kind == JobEvent::Kind::thinking) thinking += e->text;
            entries += e->logprobs.size();
            if (e->kind == JobEvent::Kind::finished) {
                QCOMPARE(e->usage.completion_tokens, uint64_t(10));
                break;
            }
        }
        QVERIFY(!thinking.empty());
        QCOMPARE(entries, size_t(0));

        // With its thinking turned off, the same model answers at once.
        json off = chat_body("Hi", 10);
        off["chat_template_kwargs"] = {{"enable_thinking", false}};
        const std::shared_ptr<Job> direct = (*queue)->submit(
            std::get<CompletionRequest>(parse_completion_request(CompletionKind::chat, off.dump(), {})));
        std::string answer;
        for (;;) {
            const std::optional<JobEvent> e = direct->channel.next(std::chrono::minutes(5));
            QVERIFY(e);
            QVERIFY(e->kind != JobEvent::Kind::thinking && e->kind != JobEvent::Kind::failed && e->kind != JobEvent::Kind::rejected);
            if (e->kind == JobEvent::Kind::answer) answer += e->text;
            if (e->kind == JobEvent::Kind::finished) break;
        }
        QVERIFY(!answer.empty());
    }

    // Tools reach a model whose template shows them (stories260K under Qwen3's template):
    // the prompt grows by their description, an assistant's call and a tool's result are
    // rendered, and a model whose template shows no tools refuses them by name.
    void toolsReachATemplateThatShowsThem() {
        const json tools = json::parse(
            R"([{"type":"function","function":{"name":"get_weather","description":"The weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
        json with_tools = chat_body("Weather in Paris?", 4);
        with_tools["tools"] = tools;
        const auto [status, refusal] = post("/v1/chat/completions", with_tools);  // the bundled model's plain template
        QCOMPARE(status, 400);
        QCOMPARE(refusal["error"]["param"], "tools");

        QTemporaryDir dir;
        const std::string path = dir.filePath("qwen3-template.gguf").toStdString();
        std::ifstream source(std::string(LONGREAD_SHARED_DIR) + "/data/chat-templates/Qwen-Qwen3-0.6B.jinja");
        const std::string jinja((std::istreambuf_iterator<char>(source)), std::istreambuf_iterator<char>());
        QVERIFY(test::copy_gguf_with_string(kModel, path, "tokenizer.chat_template", jinja).ok());
        Engine engine;
        QVERIFY(engine.load({.path = path, .backend = "cpu", .n_threads = 1}).ok());
        QCOMPARE(engine.model_info().tool_call_format, std::string("hermes"));
        ServerMetrics metrics;
        SessionOptions options{.n_ctx = 2048, .chunk_tokens = 256};  // the tools' instructions take ~600 of its tokens
        options.kv.prefix_cache = false;
        auto queue = GenerationQueue::create(engine.model(), options, 1, metrics);
        QVERIFY(queue.ok());
        auto prompt_tokens = [&](const json & body) {
            auto request = parse_completion_request(CompletionKind::chat, body.dump(), {});
            if (auto * e = std::get_if<ApiError>(&request)) qFatal("refused: %s", e->message.c_str());
            const std::shared_ptr<Job> job = (*queue)->submit(std::get<CompletionRequest>(request));
            for (;;) {
                const std::optional<JobEvent> e = job->channel.next(std::chrono::minutes(5));
                if (!e || e->kind == JobEvent::Kind::rejected || e->kind == JobEvent::Kind::failed)
                    qFatal("no reply: %s", e ? e->error.message.c_str() : "timeout");
                if (e->kind == JobEvent::Kind::finished) return e->usage.prompt_tokens;
            }
        };
        const uint64_t plain = prompt_tokens(chat_body("Weather in Paris?", 4));
        const uint64_t offered = prompt_tokens(with_tools);
        QVERIFY2(offered > plain + 40, qPrintable(QString("%1 vs %2").arg(offered).arg(plain)));  // the tools' description and format

        json answered = with_tools;
        answered["messages"].push_back({{"role", "assistant"},
                                        {"content", nullptr},
                                        {"tool_calls",
                                         {{{"id", "call_1"},
                                           {"type", "function"},
                                           {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}});
        answered["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C and sunny"}});
        QVERIFY(prompt_tokens(answered) > offered + 10);  // the call and its result are in the prompt
    }

    void aPromptOverTheContextIs400() {
        std::string longer;
        for (int i = 0; i < 100; ++i) longer += "Once upon a time there was a cat. ";
        for (const bool stream : {false, true}) {
            json body = chat_body(longer, 4);
            body["stream"] = stream;
            const auto [status, error] = post("/v1/chat/completions", body);
            QCOMPARE(status, 400);
            QCOMPARE(error["error"]["code"], "context_length_exceeded");
            QVERIFY(error["error"]["message"].get<std::string>().find("maximum context length") != std::string::npos);
            QVERIFY(error["error"]["n_prompt_tokens"].get<int>() > int(kContext));
            QCOMPARE(error["error"]["n_ctx"], kContext);
        }
        QCOMPARE(post("/v1/completions", {{"prompt", longer}}).second["error"]["code"], "context_length_exceeded");
        // The streaming policy runs past the context.
        json streaming = chat_body(longer, 4);
        streaming["longread"] = {{"kv_policy", "streaming"}};
        const auto [status, reply] = post("/v1/chat/completions", streaming);
        QCOMPARE(status, 200);
        QCOMPARE(reply["usage"]["completion_tokens"], 4);
    }

    void badInputIsAnOpenAiError() {
        auto r = client().Post("/v1/chat/completions", "{\"messages\": [", "application/json");
        QVERIFY(r);
        QCOMPARE(r->status, 400);
        const json e = json::parse(r->body)["error"];
        for (const char * key : {"message", "type", "param", "code"}) QVERIFY2(e.contains(key), key);
        QCOMPARE(e["type"], "invalid_request_error");

        json bad = chat_body("hi", 4);
        bad["longread"] = {{"keep_ratio", 7}};
        const auto [status, error] = post("/v1/chat/completions", bad);
        QCOMPARE(status, 400);
        QCOMPARE(error["error"]["param"], "longread.keep_ratio");

        auto missing = client().Get("/v1/nothing");
        QCOMPARE(missing->status, 404);
        QVERIFY(json::parse(missing->body).contains("error"));

        const std::string huge((size_t(32) << 20) + 1, ' ');
        auto too_big = client().Post("/v1/chat/completions", huge, "application/json");
        QVERIFY(too_big);
        QCOMPARE(too_big->status, 413);
    }

    void anAbortedStreamCancelsItsGeneration() {
        // Without a cancel this reply would never end (no token limit, a policy that never fills).
        json body = chat_body("Once upon a time", 1 << 24);
        body["stream"] = true;
        body["longread"] = {{"kv_policy", "streaming"}};
        int chunks = 0;
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/chat/completions";
        req.headers = {{"Authorization", "Bearer " + kKey}, {"Content-Type", "application/json"}};
        req.body = body.dump();
        req.content_receiver = [&](const char *, size_t, uint64_t, uint64_t) { return ++chunks < 5; };
        const httplib::Result r = client().send(req);
        QVERIFY(!r);
        QCOMPARE(r.error(), httplib::Error::Canceled);
        // The engine is free again: the next request is served.
        auto health = client(false).Get("/health");
        QCOMPARE(health->status, 200);
        const auto [status, reply] = post("/v1/chat/completions", chat_body("Once upon a time", 3));
        QCOMPARE(status, 200);
        QCOMPARE(reply["usage"]["completion_tokens"], 3);
    }

    void aConnectionStaysUsableAfterAStream() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        QVERIFY(fd >= 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(uint16_t(m_port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr), 0);
        json body = chat_body("Once upon a time", 8);
        body["stream"] = true;
        const std::string payload = body.dump();
        const std::string stream_request = "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + kKey +
                                           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(payload.size()) +
                                           "\r\n\r\n" + payload;
        const std::string first = round_trip(fd, stream_request);
        QVERIFY2(first.starts_with("HTTP/1.1 200"), first.c_str());
        QVERIFY(first.find("data: [DONE]") != std::string::npos);
        const std::string second = round_trip(fd,
                                              "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + kKey + "\r\n\r\n");
        QVERIFY2(second.starts_with("HTTP/1.1 200"), second.c_str());
        QVERIFY(second.find("stories260K") != std::string::npos);
        ::close(fd);
    }

    void metricsAreParsed() {
        auto r = client().Get("/metrics");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        std::istringstream in(r->body);
        std::string line;
        int samples = 0;
        while (std::getline(in, line)) {
            if (line.starts_with("#")) continue;
            const size_t space = line.rfind(' ');
            QVERIFY2(line.starts_with("longread_") && space != std::string::npos, line.c_str());
            bool ok = false;
            QString::fromStdString(line.substr(space + 1)).toDouble(&ok);
            QVERIFY2(ok, line.c_str());
            ++samples;
        }
        QVERIFY(samples > 40);
        QVERIFY(metric(R"(longread_requests_total{endpoint="/v1/chat/completions",status="200"})") >= 4);
        QVERIFY(metric(R"(longread_requests_total{endpoint="/v1/chat/completions",status="400"})") >= 2);
        QVERIFY(metric(R"(longread_requests_total{endpoint="/v1/models",status="401"})") >= 3);
        QVERIFY(metric("longread_generated_tokens_total") > 100);
        QVERIFY(metric("longread_prompt_tokens_total") > 10);
        QVERIFY(metric("longread_time_to_first_token_seconds_count") >= 4);
        QVERIFY(metric("longread_inter_token_latency_seconds_count") > 100);
        QCOMPARE(metric("longread_sequences_running"), 0.0);
        QCOMPARE(metric("longread_sequences_queued"), 0.0);
        // A request's KV is freed when it ends; the budgets stay.
        QCOMPARE(metric(R"(longread_kv_bytes_used{tier="device"})"), 0.0);
        QVERIFY(metric(R"(longread_kv_bytes_capacity{tier="device"})") > 0);
        QVERIFY(metric("longread_kv_hit_rate") >= 0);
        QCOMPARE(metric("longread_refusals_total"), 0.0);
    }
};

QTEST_GUILESS_MAIN(TestServerHttp)
#include "test_server_http.moc"
