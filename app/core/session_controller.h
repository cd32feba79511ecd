#pragma once
// The desktop app's logic, on the GUI thread: conversations and their messages (list models
// + storage), the document of each conversation, replies and summaries streamed from the
// engine thread, the model, and each conversation's engine settings.
//
// A reply is saved when it starts (empty, streaming), its text (answer and thinking, apart)
// is flushed to the database about once a second while it streams, and it is saved with its
// final text and state when it ends: killing the program loses at most the last second of a reply. Switching
// conversations during a reply lets it finish into its own conversation.
//
// Every engine request is an EngineJob whose signals reach the handlers of what it is for
// (the reply, the model load, one conversation's document): a job that is replaced or no
// longer wanted is abandoned, so no handler matches job ids. The main window sees the
// engine through this controller only.

#include <QObject>
#include <QTimer>

#include <map>
#include <memory>
#include <optional>

#include "app/core/app_settings.h"
#include "app/core/cache_snapshot.h"
#include "app/core/conversation_list_model.h"
#include "app/core/conversation_repository.h"
#include "app/core/database.h"
#include "app/core/document_lifecycle.h"
#include "app/core/document_loader.h"
#include "app/core/document_repository.h"
#include "app/core/engine_requests.h"
#include "app/core/engine_results.h"
#include "app/core/message_list_model.h"
#include "app/core/message_repository.h"
#include "app/core/settings_repository.h"

namespace lr::app {

class EngineHost;
class EngineJob;

class SessionController : public QObject {
    Q_OBJECT
public:
    // `db` must be open; all three must outlive the controller.
    SessionController(Database & db, EngineHost & engine, AppSettings & settings, QObject * parent = nullptr);
    ~SessionController() override;

    ConversationListModel * conversations() { return &m_conversations; }
    MessageListModel * messages() { return &m_messages; }

    qint64 currentConversation() const { return m_current; }
    bool isReplying() const { return m_reply.has_value(); }
    bool isModelReady() const { return m_modelReady; }
    bool isModelLoading() const { return m_loadJob != nullptr; }
    bool isEngineBusy() const;
    const ModelInfo & model() const { return m_model; }
    const DocumentState & document() const { return m_document.state(); }
    const EngineSettings & settings() const { return m_settings; }
    const std::optional<RetentionSnapshot> & retention() const { return m_retention; }
    // The last user message of the conversation on screen (for edit-and-resend).
    QString lastPrompt() const;
    bool canRegenerate() const;
    bool canSummarize() const { return m_document.canSummarize() && !isReplying(); }

    // How often streaming text is written to the database (tests shorten it).
    void setFlushInterval(int ms) { m_flushTimer.setInterval(ms); }
    int flushInterval() const { return m_flushTimer.interval(); }

public slots:
    // Interrupted replies of a previous run are marked, the last model is loaded, the list is
    // loaded and the last conversation is selected (its document is read with that model).
    void start();
    void loadModel(const QString & path);
    void newConversation();
    void selectConversation(qint64 id);
    void renameConversation(qint64 id, const QString & title);
    void deleteConversation(qint64 id);
    void search(const QString & text);

    void sendMessage(const QString & text);
    // Stops the reply (or summary) being generated; the text so far is kept.
    void stop();
    void regenerate();
    // Replaces the last user message (and its reply) with `text` and sends it.
    void resendEdited(const QString & text);

    void attachDocument(const QString & path);
    void removeDocument();
    void readDocumentAgain();
    void stopReadingDocument();
    void summarizeDocument();

    // The current conversation's settings; applied at its next turn.
    void setSettings(const lr::app::EngineSettings & settings);
    void saveSettingsAsDefaults();

signals:
    void currentConversationChanged(qint64 id);
    void replyingChanged(bool replying);
    void modelLoading(const QString & path);
    void modelReady(const lr::app::ModelInfo & info);
    void modelFailed(const QString & message);
    // The loaded model's weights, for the app's server: null when a load begins (the engine
    // is about to let the old ones go), then the new ones once loaded.
    void weightsChanged(const std::shared_ptr<const lr::Model> & weights, const QString & modelPath);
    void documentChanged(const lr::app::DocumentState & state);
    void summaryProgress(const lr::app::SummaryStatus & status);
    void settingsChanged(const lr::app::EngineSettings & settings);
    void retentionChanged(const lr::app::RetentionSnapshot & retention);
    // The engine's cache, a few times a second while it works (the cache panel).
    void cacheSnapshot(const lr::app::CacheSnapshot & snapshot);
    void engineBusyChanged(bool busy);
    // A problem the user should read (shown above the composer).
    void errorOccurred(const QString & message);
    // A database write failed: what was not saved and why.
    void storageFailed(const QString & message);

private:
    struct Reply {
        EngineJob * job = nullptr;
        JobKind kind = JobKind::chat;
        qint64 conversationId = 0;
        qint64 messageId = 0;
        QString text;
        QString thinking;
        bool dirty = false;
    };

    void onToken(const QString & piece);
    void onThinking(const QString & piece);
    void onReplyProgress(const JobProgress & progress);
    void onReplyFinished(const JobResult & result);
    void onModelFinished(const JobResult & result);
    void onModelFailed(const JobError & error);
    void onRetention(const std::optional<RetentionSnapshot> & retention);
    void onDocumentLoaded(qint64 conversationId, const DocumentLoadResult & result);
    void flush();

    bool stored(bool ok, const QString & what);
    qint64 ensureConversation();
    void retitleIfNew(qint64 conversationId, const QString & basis);
    ConversationContext contextFor(qint64 conversationId, qint64 beforeMessageId = 0) const;
    // `settings`: the conversation's, or a copy with another seed (regenerate).
    void startReply(JobKind kind, const ConversationContext & context, const QString & userText, const EngineSettings & settings);
    void endReply(const ReplyEnding & ending);
    void showDocument();
    void requestDocumentRead();
    // Stops the reading of `conversationId`'s document, if one runs; its job says nothing more.
    void abandonReading(qint64 conversationId);
    EngineSettings settingsFor(qint64 conversationId) const;

    Database & m_db;
    EngineHost & m_engine;
    AppSettings & m_appSettings;
    ConversationRepository m_conversationRepo;
    MessageRepository m_messageRepo;
    DocumentRepository m_documentRepo;
    SettingsRepository m_settingsRepo;
    ConversationListModel m_conversations;
    MessageListModel m_messages;

    qint64 m_current = 0;
    EngineSettings m_settings;
    DocumentLifecycle m_document;
    std::optional<RetentionSnapshot> m_retention;
    std::optional<Reply> m_reply;
    std::map<qint64, EngineJob *> m_readingJobs;  // conversation -> the job reading its document
    EngineJob * m_loadJob = nullptr;
    QString m_loadingPath;
    bool m_startupLoad = false;
    bool m_modelReady = false;
    ModelInfo m_model;
    QTimer m_flushTimer;
    int m_documentLoadsInFlight = 0;  // files being turned into text (off the GUI thread)
};

}  // namespace lr::app
