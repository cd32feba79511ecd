// One message bubble (offscreen): a reply with thinking shows it collapsed above the answer
// ("Thinking…" while it thinks, "Thought for N words" after), opens on a click or the
// keyboard, and copying copies the answer only; a message without thinking shows nothing
// more than before.
#include <QClipboard>
#include <QLabel>
#include <QToolButton>
#include <QtTest>

#include "support/eventually.h"
#include "ui/icon_provider.h"
#include "ui/message_bubble.h"
#include "ui/thinking_section.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;
using namespace lr::test;

class TestMessageBubble : public QObject {
    Q_OBJECT

    IconProvider m_icons{Qt::black};

    static MessageRecord reply(const QString & text, const QString & thinking, MessageState state = MessageState::finished) {
        return {.id = 2, .conversationId = 1, .role = QStringLiteral("assistant"), .text = text, .thinking = thinking, .state = state};
    }
    static QToolButton * button(const MessageBubble & bubble, const QString & accessibleName) {
        for (QToolButton * b : bubble.findChildren<QToolButton *>()) {
            if (b->accessibleName() == accessibleName) return b;
        }
        return nullptr;
    }

private slots:
    void aReplyWithoutThinkingShowsNothingMore_data() {
        QTest::addColumn<QString>("role");
        QTest::newRow("user") << "user";
        QTest::newRow("assistant") << "assistant";
    }
    void aReplyWithoutThinkingShowsNothingMore() {
        QFETCH(QString, role);
        MessageBubble bubble({.id = 1, .conversationId = 1, .role = role, .text = QStringLiteral("Sales rose.")}, m_icons);
        bubble.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bubble));
        QVERIFY(!bubble.thinking()->isVisible());
        QVERIFY(bubble.textLabel()->isVisible());
        QCOMPARE(bubble.textLabel()->text(), QStringLiteral("Sales rose."));
    }

    void thinkingIsCollapsedAndOpensOnAClick() {
        const QString thought = QStringLiteral("The user asks about the report.\nIt is about sales.");
        MessageBubble bubble(reply(QStringLiteral("Sales rose."), thought), m_icons);
        bubble.resize(500, 300);
        bubble.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bubble));
        ThinkingSection * section = bubble.thinking();
        QVERIFY(section->isVisible());
        QVERIFY(!section->isExpanded());
        QVERIFY(!section->textLabel()->isVisible());
        QCOMPARE(section->toggle()->text(), QStringLiteral("Thought for 10 words"));
        QCOMPARE(section->toggle()->arrowType(), Qt::RightArrow);
        QCOMPARE(section->toggle()->accessibleName(), QStringLiteral("Thinking"));
        QVERIFY(bubble.textLabel()->isVisible());
        const int collapsedHeight = bubble.sizeHint().height();

        QTest::mouseClick(section->toggle(), Qt::LeftButton);
        QVERIFY(section->isExpanded());
        QVERIFY(section->textLabel()->isVisible());
        QCOMPARE(section->textLabel()->text(), thought);
        QCOMPARE(section->toggle()->arrowType(), Qt::DownArrow);
        QVERIFY(bubble.sizeHint().height() > collapsedHeight);
        QTest::mouseClick(section->toggle(), Qt::LeftButton);
        QVERIFY(!section->isExpanded());
        QVERIFY(!section->textLabel()->isVisible());
    }

    void theToggleWorksFromTheKeyboard() {
        MessageBubble bubble(reply(QStringLiteral("Yes."), QStringLiteral("Check first.")), m_icons);
        bubble.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bubble));
        QToolButton * toggle = bubble.thinking()->toggle();
        QVERIFY(toggle->focusPolicy() & Qt::TabFocus);
        toggle->setFocus();
        QTRY_VERIFY_WITH_TIMEOUT(toggle->hasFocus(), kEventuallyMs);
        QTest::keyClick(toggle, Qt::Key_Space);
        QVERIFY(bubble.thinking()->isExpanded());
        QVERIFY(bubble.thinking()->textLabel()->isVisible());
    }

    // While the model thinks, the section says so and the answer's place stays empty; the
    // thinking streams into an open section.
    void aStreamingReplyThinksThenAnswers() {
        MessageBubble bubble(reply(QString(), QStringLiteral("Hmm"), MessageState::streaming), m_icons);
        bubble.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bubble));
        ThinkingSection * section = bubble.thinking();
        QVERIFY(section->isVisible());
        QCOMPARE(section->toggle()->text(), QStringLiteral("Thinking\u2026"));
        QVERIFY(!bubble.textLabel()->isVisible());
        section->setExpanded(true);
        bubble.setMessage(reply(QString(), QStringLiteral("Hmm, sales"), MessageState::streaming));
        QCOMPARE(section->textLabel()->text(), QStringLiteral("Hmm, sales"));
        bubble.setMessage(reply(QStringLiteral("Sales"), QStringLiteral("Hmm, sales."), MessageState::streaming));
        QCOMPARE(section->toggle()->text(), QStringLiteral("Thought for 2 words"));
        QVERIFY(bubble.textLabel()->isVisible());
        bubble.setMessage(reply(QStringLiteral("Sales."), QStringLiteral("Hmm."), MessageState::finished));
        QCOMPARE(section->toggle()->text(), QStringLiteral("Thought for 1 word"));
        QVERIFY(section->isExpanded());  // what the user opened stays open
    }

    void copyingCopiesTheAnswerOnly() {
        MessageBubble bubble(reply(QStringLiteral("Sales rose."), QStringLiteral("Look at the table.")), m_icons);
        bubble.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bubble));
        QToolButton * copy = button(bubble, QStringLiteral("Copy message"));
        QVERIFY(copy);
        QGuiApplication::clipboard()->clear();
        QTest::mouseClick(copy, Qt::LeftButton);
        QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("Sales rose."));
    }
};

QTEST_MAIN(TestMessageBubble)
#include "test_message_bubble.moc"
