// The item models (conversations, messages, models found) under QAbstractItemModelTester,
// with exact signal counts: each change is one signal of the right kind.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

#include "app/core/conversation_list_model.h"
#include "app/core/message_list_model.h"
#include "app/core/model_list_model.h"

using namespace lr;
using namespace lr::app;

namespace {

ConversationRecord conversation(qint64 id, const QString & title) { return {.id = id, .title = title, .createdAt = id, .updatedAt = id}; }
MessageRecord message(qint64 id, const QString & role, const QString & text) {
    return {.id = id, .conversationId = 1, .role = role, .text = text};
}

struct Spies {
    explicit Spies(QAbstractItemModel * m)
        : reset(m, &QAbstractItemModel::modelReset), inserted(m, &QAbstractItemModel::rowsInserted),
          removed(m, &QAbstractItemModel::rowsRemoved), moved(m, &QAbstractItemModel::rowsMoved),
          changed(m, &QAbstractItemModel::dataChanged) {}
    QSignalSpy reset, inserted, removed, moved, changed;
    QList<int> counts() const {
        return {int(reset.count()), int(inserted.count()), int(removed.count()), int(moved.count()), int(changed.count())};
    }
};

}  // namespace

class TestAppModels : public QObject {
    Q_OBJECT
private slots:
    void conversationListSignals_data() {
        QTest::addColumn<QString>("action");
        QTest::addColumn<QList<int>>("counts");  // reset, inserted, removed, moved, changed
        QTest::addColumn<QStringList>("titles");
        QTest::newRow("reset") << "reset" << QList<int>{1, 0, 0, 0, 0} << QStringList{"x", "y"};
        QTest::newRow("prepend") << "prepend" << QList<int>{0, 1, 0, 0, 0} << QStringList{"new", "c", "b", "a"};
        QTest::newRow("rename") << "rename" << QList<int>{0, 0, 0, 0, 1} << QStringList{"c", "B!", "a"};
        QTest::newRow("rename absent") << "renameAbsent" << QList<int>{0, 0, 0, 0, 0} << QStringList{"c", "b", "a"};
        QTest::newRow("remove") << "remove" << QList<int>{0, 0, 1, 0, 0} << QStringList{"c", "a"};
        QTest::newRow("move to top") << "moveToTop" << QList<int>{0, 0, 0, 1, 1} << QStringList{"a", "c", "b"};
        QTest::newRow("top stays top") << "moveTopToTop" << QList<int>{0, 0, 0, 0, 1} << QStringList{"c", "b", "a"};
    }
    void conversationListSignals() {
        QFETCH(QString, action);
        QFETCH(QList<int>, counts);
        QFETCH(QStringList, titles);
        ConversationListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setConversations({conversation(3, "c"), conversation(2, "b"), conversation(1, "a")});
        Spies spies(&model);
        if (action == "reset") model.setConversations({conversation(8, "x"), conversation(9, "y")});
        if (action == "prepend") model.prepend(conversation(4, "new"));
        if (action == "rename") model.update(conversation(2, "B!"));
        if (action == "renameAbsent") model.update(conversation(42, "nobody"));
        if (action == "remove") model.remove(2);
        if (action == "moveToTop") model.moveToTop(1, 100);
        if (action == "moveTopToTop") model.moveToTop(3, 100);
        QCOMPARE(spies.counts(), counts);
        QStringList actual;
        for (int r = 0; r < model.rowCount(); ++r) actual << model.index(r).data().toString();
        QCOMPARE(actual, titles);
        if (action == "moveToTop") {
            QCOMPARE(model.index(0).data(ConversationListModel::UpdatedAtRole).toLongLong(), qint64(100));
            QCOMPARE(model.idAt(0), qint64(1));
        }
    }

    void conversationRoles() {
        ConversationListModel model;
        model.setConversations({conversation(5, "Contract")});
        const QModelIndex i = model.index(0);
        QCOMPARE(i.data(ConversationListModel::IdRole).toLongLong(), qint64(5));
        QCOMPARE(i.data(ConversationListModel::TitleRole).toString(), QStringLiteral("Contract"));
        QVERIFY(i.data(Qt::AccessibleTextRole).toString().contains(QStringLiteral("Contract")));
        QCOMPARE(model.rowOf(5), 0);
        QCOMPARE(model.rowOf(6), -1);
        QCOMPARE(model.idAt(3), qint64(0));
        QVERIFY(model.roleNames().contains(ConversationListModel::TitleRole));
    }

    void messageStreamingSignals() {
        MessageListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMessages(1, {message(1, "user", "hi")});
        Spies spies(&model);
        model.append(message(2, "assistant", ""));
        QCOMPARE(spies.inserted.count(), 1);
        for (const char * piece : {"Hel", "lo", "", "!"}) model.appendText(2, QString::fromLatin1(piece));
        QCOMPARE(spies.changed.count(), 3);  // the empty piece changes nothing
        for (const QList<QVariant> & args : spies.changed) {
            QCOMPARE(args.at(2).value<QList<int>>(), QList<int>{MessageListModel::TextRole});
        }
        QCOMPARE(model.index(1).data(MessageListModel::TextRole).toString(), QStringLiteral("Hello!"));
        model.setProgressNote(2, QStringLiteral("Reading"));
        model.setProgressNote(2, QStringLiteral("Reading"));  // same note: no signal
        QCOMPARE(spies.changed.count(), 4);
        // Thinking streams on its own role.
        for (const char * piece : {"Greet", "", " back"}) model.appendThinking(2, QString::fromLatin1(piece));
        QCOMPARE(spies.changed.count(), 6);
        QCOMPARE(spies.changed.last().at(2).value<QList<int>>(), QList<int>{MessageListModel::ThinkingRole});
        QCOMPARE(model.index(1).data(MessageListModel::ThinkingRole).toString(), QStringLiteral("Greet back"));
        QCOMPARE(model.index(1).data(MessageListModel::TextRole).toString(), QStringLiteral("Hello!"));
        model.finish(2, {.text = QStringLiteral("Hello!"),
                         .thinking = QStringLiteral("Greet back."),
                         .state = MessageState::stopped,
                         .stopReason = QStringLiteral("stopped"),
                         .note = QStringLiteral("2 tokens")});
        QCOMPARE(spies.changed.count(), 7);
        const QList<int> roles = spies.changed.last().at(2).value<QList<int>>();
        QVERIFY(roles.contains(MessageListModel::StateRole) && roles.contains(MessageListModel::NoteRole));
        QVERIFY(roles.contains(MessageListModel::ThinkingRole));
        QCOMPARE(model.index(1).data(MessageListModel::StateRole).toInt(), int(MessageState::stopped));
        QCOMPARE(model.index(1).data(MessageListModel::ThinkingRole).toString(), QStringLiteral("Greet back."));
        model.setText(2, QStringLiteral("Hello!"));  // unchanged: no signal
        model.setThinking(2, QStringLiteral("Greet back."));
        QCOMPARE(spies.changed.count(), 7);
        model.setThinking(2, QStringLiteral("Greet."));
        QCOMPARE(spies.changed.count(), 8);
        model.remove(1);
        QCOMPARE(spies.removed.count(), 1);
        model.remove(99);
        QCOMPARE(spies.removed.count(), 1);
        model.setMessages(2, {});
        QCOMPARE(spies.reset.count(), 1);
        QCOMPARE(model.conversationId(), qint64(2));
        QCOMPARE(spies.inserted.count(), 1);
    }

    void modelListShowsEstimatesAndReasons() {
        ModelListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        ModelEntry good{.path = "/m/good.gguf",
                        .source = "~/models",
                        .name = "Good",
                        .architecture = "llama",
                        .quantization = "Q4_0",
                        .fileBytes = 1 << 20,
                        .nCtxTrain = 4096,
                        .shape = {.n_layer = 4, .n_head_kv = 2, .head_dim = 64, .n_ctx_train = 4096, .weight_bytes = 1 << 20},
                        .supported = true};
        ModelEntry bad{.path = "/m/moe.gguf",
                       .source = "LM Studio",
                       .name = "Moe",
                       .architecture = "mamba",
                       .supported = false,
                       .problem = "model architecture 'mamba' is not supported"};
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.setEntries({good, bad});
        QCOMPARE(reset.count(), 1);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.columnCount(), int(ModelListModel::ColumnCount));
        QCOMPARE(model.index(0, ModelListModel::ContextColumn).data().toInt(), 4096);
        QVERIFY(model.index(0, ModelListModel::MemoryColumn).data().toString().startsWith(QStringLiteral("fits")));
        QCOMPARE(model.index(0, 0).data(ModelListModel::VerdictRole).toInt(), int(MemoryVerdict::fits));
        QVERIFY(model.index(1, ModelListModel::MemoryColumn).data().toString().contains(QStringLiteral("mamba")));
        QCOMPARE(model.index(1, 0).data(ModelListModel::SupportedRole).toBool(), false);
        QVERIFY(model.index(1, 0).data(Qt::ToolTipRole).toString().startsWith(QStringLiteral("Cannot be used")));

        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        EngineSettings settings;
        settings.contextTokens = 1 << 20;  // beyond the trained context
        model.setSettings(settings);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.at(0).at(0).toModelIndex().column(), int(ModelListModel::MemoryColumn));
        QCOMPARE(model.index(0, 0).data(ModelListModel::VerdictRole).toInt(), int(MemoryVerdict::wont_fit));
        QVERIFY(model.index(0, ModelListModel::MemoryColumn).data().toString().startsWith(QStringLiteral("won't fit")));
        QVERIFY(model.index(0, ModelListModel::MemoryColumn).data(Qt::ToolTipRole).toString().contains(QStringLiteral("trained")));
    }
};

QTEST_MAIN(TestAppModels)
#include "test_app_models.moc"
