// ThinkingSplitter: Qwen3's and Qwen3.5's <think> tags, Mistral's [THINK], Gemma 4's thought
// channel, gpt-oss's harmony channels, on whole replies and on the same replies streamed in
// every way of cutting them.

#include <QtTest>

#include <random>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat/thinking_splitter.h"

Q_DECLARE_METATYPE(lr::chat::ThinkingFormat)

using namespace lr::chat;

namespace {

// The reply fed in pieces of `sizes` (cycled), outputs concatenated.
ThinkingSplit streamed(ThinkingFormat format, const std::string & reply, bool in_thinking, const std::vector<size_t> & sizes) {
    ThinkingSplitter splitter(format, in_thinking);
    ThinkingSplit all;
    size_t i = 0;
    for (size_t pos = 0; pos < reply.size(); ++i) {
        const size_t n = std::min(sizes[i % sizes.size()], reply.size() - pos);
        const ThinkingSplit part = splitter.push(std::string_view(reply).substr(pos, n));
        all.thinking += part.thinking;
        all.answer += part.answer;
        pos += n;
    }
    const ThinkingSplit rest = splitter.flush();
    all.thinking += rest.thinking;
    all.answer += rest.answer;
    return all;
}

}  // namespace

class TestThinkingSplitter : public QObject {
    Q_OBJECT
private slots:
    void splits_data() {
        QTest::addColumn<ThinkingFormat>("format");
        QTest::addColumn<bool>("in_thinking");
        QTest::addColumn<QString>("reply");
        QTest::addColumn<QString>("thinking");
        QTest::addColumn<QString>("answer");
        const auto tags = ThinkingFormat::think_tags;
        QTest::newRow("qwen3") << tags << false << "<think>\nThe user adds.\n2+2=4.\n</think>\n\nThe answer is 4."
                               << "The user adds.\n2+2=4."
                               << "The answer is 4.";
        QTest::newRow("qwen3 no thinking") << tags << false << "The answer is 4.\n"
                                           << ""
                                           << "The answer is 4.\n";
        QTest::newRow("qwen3 empty thinking") << tags << false << "<think>\n\n</think>\n\nHi"
                                              << ""
                                              << "Hi";
        QTest::newRow("space before the tag") << tags << false << "\n <think>x</think>y"
                                              << "x"
                                              << "y";
        QTest::newRow("tags inside the answer") << tags << false << "Use <think> and </think> tags."
                                                << ""
                                                << "Use <think> and </think> tags.";
        QTest::newRow("a second closing tag is text") << tags << false << "<think>a</think>b</think>c"
                                                      << "a"
                                                      << "b</think>c";
        QTest::newRow("never closed") << tags << false << "<think>\nStill thinking "
                                      << "Still thinking"
                                      << "";
        QTest::newRow("partial tag at the end") << tags << false << "<think>a</thi"
                                                << "a</thi"
                                                << "";
        QTest::newRow("partial tag at the start") << tags << false << "<thin"
                                                  << ""
                                                  << "<thin";
        QTest::newRow("answer keeps inner blank lines") << tags << false << "<think>t</think>\n\nOne.\n\nTwo.\n"
                                                        << "t"
                                                        << "One.\n\nTwo.\n";
        QTest::newRow("prompt opened the thinking") << tags << true << "Hmm, 2+2.\n</think>\n\nFour."
                                                    << "Hmm, 2+2."
                                                    << "Four.";
        QTest::newRow("closing tag without opening") << tags << false << "Hmm.</think>\n\nFour."
                                                     << ""
                                                     << "Hmm.</think>\n\nFour.";
        QTest::newRow("closing tag first") << tags << false << "</think>\n\nFour."
                                           << ""
                                           << "Four.";
        QTest::newRow("mistral brackets") << ThinkingFormat::think_brackets << false << "[THINK]Let me see.[/THINK]Four."
                                          << "Let me see."
                                          << "Four.";
        // Qwen3.5's prompt ends in "<think>\n": the reply starts in the thinking.
        QTest::newRow("qwen3.5") << tags << true << "The user greets.\n</think>\n\nHello!"
                                 << "The user greets."
                                 << "Hello!";
        // With enable_thinking false the prompt closed an empty block: all answer.
        QTest::newRow("qwen3.5 thinking off") << tags << false << "Hello!"
                                              << ""
                                              << "Hello!";

        const auto channel = ThinkingFormat::thought_channel;
        QTest::newRow("gemma4") << channel << false << "<|channel>thought\nThe user adds.\n2+2=4.<channel|>The answer is 4."
                                << "The user adds.\n2+2=4."
                                << "The answer is 4.";
        QTest::newRow("gemma4 no thinking") << channel << false << "The answer is 4."
                                            << ""
                                            << "The answer is 4.";
        QTest::newRow("gemma4 empty channel") << channel << false << "<|channel>thought\n<channel|>Hi"
                                              << ""
                                              << "Hi";
        QTest::newRow("gemma4 never closed") << channel << false << "<|channel>thought\nStill thinking"
                                             << "Still thinking"
                                             << "";
        QTest::newRow("gemma4 channel inside the answer") << channel << false << "Write <|channel>thought then <channel|>."
                                                          << ""
                                                          << "Write <|channel>thought then <channel|>.";
        QTest::newRow("gemma4 a channel of another name is text") << channel << false << "<|channel>final\nHi"
                                                                  << ""
                                                                  << "<|channel>final\nHi";
        QTest::newRow("gemma4 think tags are text") << channel << false << "<think>x</think>y"
                                                    << ""
                                                    << "<think>x</think>y";
        QTest::newRow("none") << ThinkingFormat::none << false << "<think>x</think>y"
                              << ""
                              << "<think>x</think>y";

        const auto harmony = ThinkingFormat::harmony;
        QTest::newRow("gpt-oss") << harmony << false
                                 << "<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|>"
                                    "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4."
                                 << "User asks 2+2. Answer 4."
                                 << "2 + 2 = 4.";
        QTest::newRow("gpt-oss rendered <|return|>") << harmony << false
                                                     << "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
                                                        "<|message|>Done.<|return|>"
                                                     << "Think."
                                                     << "Done.";
        QTest::newRow("gpt-oss two analysis messages") << harmony << false
                                                       << "<|channel|>analysis<|message|>A<|end|>"
                                                          "<|start|>assistant<|channel|>analysis<|message|>B<|end|>"
                                                          "<|start|>assistant<|channel|>final<|message|>C"
                                                       << "A\n\nB"
                                                       << "C";
        QTest::newRow("gpt-oss final only") << harmony << false << "<|channel|>final<|message|>Hi <b>there</b>"
                                            << ""
                                            << "Hi <b>there</b>";
        QTest::newRow("gpt-oss commentary is answer")
            << harmony << false << "<|channel|>commentary to=functions.weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"
            << ""
            << "{\"city\":\"Paris\"}";
        QTest::newRow("gpt-oss unfinished analysis") << harmony << false << "<|channel|>analysis<|message|>Let me"
                                                     << "Let me"
                                                     << "";
        QTest::newRow("gpt-oss without the format") << harmony << false << "Plain words."
                                                    << ""
                                                    << "Plain words.";
        QTest::newRow("gpt-oss message without channel") << harmony << false << "<|message|>Hi"
                                                         << ""
                                                         << "Hi";
    }
    void splits() {
        QFETCH(ThinkingFormat, format);
        QFETCH(bool, in_thinking);
        QFETCH(QString, reply);
        QFETCH(QString, thinking);
        QFETCH(QString, answer);
        const std::string text = reply.toStdString();
        const ThinkingSplit whole = split_thinking(format, text, in_thinking);
        QCOMPARE(QString::fromStdString(whole.thinking), thinking);
        QCOMPARE(QString::fromStdString(whole.answer), answer);
        // Streamed in pieces of every fixed size and of random sizes: the same split.
        std::mt19937 rng(7);
        std::vector<std::vector<size_t>> cuts;
        for (size_t n = 1; n <= 12; ++n) cuts.push_back({n});
        for (int round = 0; round < 40; ++round) {
            std::vector<size_t> sizes;
            for (int i = 0; i < 16; ++i) sizes.push_back(1 + rng() % 9);
            cuts.push_back(sizes);
        }
        for (const std::vector<size_t> & sizes : cuts) {
            const ThinkingSplit s = streamed(format, text, in_thinking, sizes);
            QCOMPARE(QString::fromStdString(s.thinking), thinking);
            QCOMPARE(QString::fromStdString(s.answer), answer);
        }
    }

    void nothingShownThatTurnsOutToBeATag() {
        ThinkingSplitter s(ThinkingFormat::think_tags);
        QVERIFY(s.push("<thi").empty());
        QVERIFY(!s.in_thinking());
        QVERIFY(s.push("nk>\n").empty());
        QVERIFY(s.in_thinking());
        ThinkingSplit p = s.push("Two and two");
        QCOMPARE(p.thinking, std::string("Two and two"));
        p = s.push(" </");  // trailing space held, the tag's start held
        QVERIFY(p.empty());
        p = s.push("think>\n\nFour");
        QVERIFY(!s.in_thinking());
        QCOMPARE(p.thinking, std::string());
        QCOMPARE(p.answer, std::string("Four"));
        QCOMPARE(s.flush().answer, std::string());

        ThinkingSplitter g(ThinkingFormat::thought_channel);
        QVERIFY(g.push("<|channel>").empty());  // the start of "<|channel>thought"
        QVERIFY(g.push("thought").empty());
        QVERIFY(g.in_thinking());
        QVERIFY(g.push("\n").empty());
        QCOMPARE(g.push("Add.").thinking, std::string("Add."));
        QVERIFY(g.push("<channel").empty());
        QCOMPARE(g.push("|>4").answer, std::string("4"));

        ThinkingSplitter h(ThinkingFormat::harmony);
        QVERIFY(h.push("<|channel|>analysis").empty());
        QVERIFY(h.push("<|message|>").empty());
        QVERIFY(h.in_thinking());
        QCOMPARE(h.push("Hmm").thinking, std::string("Hmm"));
        QVERIFY(h.push("<|end|><|start|>assistant<|channel|>final<|message|>").empty());
        QVERIFY(!h.in_thinking());
        QCOMPARE(h.push("Yes.").answer, std::string("Yes."));
    }

    void flushStartsAgain() {
        ThinkingSplitter s(ThinkingFormat::think_tags, true);
        QCOMPARE(s.push("a</think>b").answer, std::string("b"));
        s.flush();
        QVERIFY(s.in_thinking());  // as new: the next reply starts in the thinking too
        QCOMPARE(s.push("c").thinking, std::string("c"));
    }

    void promptOpensThinking() {
        QVERIFY(prompt_opens_thinking(ThinkingFormat::think_tags, "<|im_start|>assistant\n<think>\n"));
        QVERIFY(!prompt_opens_thinking(ThinkingFormat::think_tags, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        QVERIFY(!prompt_opens_thinking(ThinkingFormat::think_tags, "<|im_start|>assistant\n"));
        QVERIFY(prompt_opens_thinking(ThinkingFormat::think_brackets, "[INST]Hi[/INST][THINK]"));
        QVERIFY(!prompt_opens_thinking(ThinkingFormat::harmony, "<|start|>assistant<think>"));
        // Gemma 4: thinking on ends the prompt with the model's turn, off with an empty channel.
        QVERIFY(!prompt_opens_thinking(ThinkingFormat::thought_channel, "<|turn>model\n"));
        QVERIFY(!prompt_opens_thinking(ThinkingFormat::thought_channel, "<|turn>model\n<|channel>thought\n<channel|>"));
        QVERIFY(prompt_opens_thinking(ThinkingFormat::thought_channel, "<|turn>model\n<|channel>thought\n"));
    }

    void formatOfFamily() {
        QCOMPARE(thinking_format_of(ChatFamily::qwen3), ThinkingFormat::think_tags);
        QCOMPARE(thinking_format_of(ChatFamily::qwen35), ThinkingFormat::think_tags);
        QCOMPARE(thinking_format_of(ChatFamily::gemma4), ThinkingFormat::thought_channel);
        QCOMPARE(thinking_format_of(ChatFamily::deepseek), ThinkingFormat::think_tags);
        QCOMPARE(thinking_format_of(ChatFamily::harmony), ThinkingFormat::harmony);
        QCOMPARE(thinking_format_of(ChatFamily::mistral3), ThinkingFormat::think_brackets);
        QCOMPARE(thinking_format_of(ChatFamily::llama3), ThinkingFormat::none);
        QCOMPARE(thinking_format_of(ChatFamily::gemma), ThinkingFormat::none);
    }
};

QTEST_GUILESS_MAIN(TestThinkingSplitter)
#include "test_thinking_splitter.moc"
