#include "session_controller.h"

#include <QDateTime>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QRandomGenerator>
#include <QtConcurrent/QtConcurrentRun>

#include "app/core/engine_host.h"

namespace lr::app {
namespace {

const QString kNewTitle = QStringLiteral("New conversation");

QString titleFrom(const QString & text) {
    const QStringList words = text.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    QString title = words.mid(0, 8).join(QLatin1Char(' '));
    if (title.size() > 60) title = title.left(57) + QStringLiteral("...");
    if (words.size() > 8) title += QStringLiteral("...");
    return title.isEmpty() ? kNewTitle : title;
}

QString speedNote(const JobResult & r) {
    if (r.generatedTokens == 0 || r.decodeMs <= 0) return {};
    return QStringLiteral("%1 tokens, %2 tok/s").arg(r.generatedTokens).arg(r.generatedTokens * 1000.0 / r.decodeMs, 0, 'f', 1);
}

}  // namespace

SessionController::SessionController(Database & db, EngineHost & engine, AppSettings & settings, QObject * parent)
    : QObject(parent), m_db(db), m_engine(engine), m_appSettings(settings), m_conversationRepo(db), m_messageRepo(db), m_documentRepo(db),
      m_settingsRepo(db), m_conversations(this), m_messages(this) {
    m_settings = m_appSettings.engineDefaults();
    m_flushTimer.setInterval(1000);
    connect(&m_flushTimer, &QTimer::timeout, this, &SessionController::flush);
    connect(&m_document, &DocumentLifecycle::changed, this, &SessionController::documentChanged);
    connect(&m_engine, &EngineHost::cacheSnapshot, this, &SessionController::cacheSnapshot);
    connect(&m_engine, &EngineHost::busyChanged, this, &SessionController::engineBusyChanged);
}

SessionController::~SessionController() {
    // What streamed since the last flush is saved; the reply stays 'streaming' in the
    // database and is marked interrupted at the next start.
    flush();
}

bool SessionController::stored(bool ok, const QString & what) {
    if (!ok) emit storageFailed(QStringLiteral("Could not save %1: %2").arg(what, m_db.lastFailure()));
    return ok;
}

void SessionController::start() {
    m_messageRepo.markInterrupted();
    // The model first: requests run in order, so the document of the conversation selected
    // below is read with it (before it, the read failed: "no model is loaded").
    m_startupLoad = true;
    loadModel(m_appSettings.lastModel());
    m_conversations.setConversations(m_conversationRepo.list());
    const qint64 last = m_appSettings.lastConversation();
    if (m_conversations.rowOf(last) >= 0) {
        selectConversation(last);
    } else if (m_conversations.rowCount() > 0) {
        selectConversation(m_conversations.idAt(0));
    }
}

bool SessionController::isEngineBusy() const { return m_engine.isBusy(); }

void SessionController::loadModel(const QString & path) {
    if (m_loadJob) m_loadJob->abandon();
    m_modelReady = false;
    m_loadingPath = path;
    emit weightsChanged(nullptr, path);
    m_loadJob = m_engine.loadModel({.path = path, .threads = m_appSettings.threads()});
    connect(m_loadJob, &EngineJob::finished, this, &SessionController::onModelFinished);
    connect(m_loadJob, &EngineJob::failed, this, &SessionController::onModelFailed);
    emit modelLoading(path);
}

// --- conversations ---------------------------------------------------------------------

qint64 SessionController::ensureConversation() {
    if (m_current == 0) newConversation();
    return m_current;
}

void SessionController::newConversation() {
    std::optional<ConversationRecord> c = m_conversationRepo.create(kNewTitle);
    if (!stored(c.has_value(), QStringLiteral("the new conversation"))) return;
    m_settingsRepo.save(c->id, toJson(m_appSettings.engineDefaults()));
    m_conversations.prepend(*c);
    selectConversation(c->id);
}

EngineSettings SessionController::settingsFor(qint64 conversationId) const {
    const EngineSettings defaults = m_appSettings.engineDefaults();
    const std::optional<QJsonObject> json = m_settingsRepo.load(conversationId);
    EngineSettings s = json ? engineSettingsFromJson(*json, defaults) : defaults;
    // The cache folder is the same for every conversation (AppSettings).
    s.kv.dir = defaults.kv.dir;
    return s;
}

void SessionController::selectConversation(qint64 id) {
    if (id == m_current) return;
    if (id != 0 && !m_conversationRepo.get(id)) return;
    m_current = id;
    m_appSettings.setLastConversation(id);
    m_messages.setMessages(id, id ? m_messageRepo.forConversation(id) : std::vector<MessageRecord>{});
    // A reply still streaming into this conversation: its latest text is in memory.
    if (m_reply && m_reply->conversationId == id) {
        m_messages.setText(m_reply->messageId, m_reply->text);
        m_messages.setThinking(m_reply->messageId, m_reply->thinking);
    }
    m_settings = id ? settingsFor(id) : m_appSettings.engineDefaults();
    m_retention.reset();
    emit currentConversationChanged(id);
    emit settingsChanged(m_settings);
    showDocument();
}

void SessionController::renameConversation(qint64 id, const QString & title) {
    const QString t = title.simplified();
    if (t.isEmpty()) return;
    if (!stored(m_conversationRepo.rename(id, t), QStringLiteral("the new title"))) return;
    if (std::optional<ConversationRecord> c = m_conversationRepo.get(id)) m_conversations.update(*c);
}

void SessionController::deleteConversation(qint64 id) {
    if (m_reply && m_reply->conversationId == id) {
        m_reply->job->abandon();
        m_flushTimer.stop();
        m_reply.reset();
        emit replyingChanged(false);
    }
    abandonReading(id);
    if (!stored(m_conversationRepo.remove(id), QStringLiteral("the deletion"))) return;
    const int row = m_conversations.rowOf(id);
    m_conversations.remove(id);
    if (id == m_current) {
        const int next = std::min(row, m_conversations.rowCount() - 1);
        m_current = -1;  // so that selecting id 0 (none) still resets the view
        selectConversation(next >= 0 ? m_conversations.idAt(next) : 0);
    }
}

void SessionController::search(const QString & text) { m_conversations.setConversations(m_conversationRepo.search(text)); }

void SessionController::retitleIfNew(qint64 conversationId, const QString & basis) {
    std::optional<ConversationRecord> c = m_conversationRepo.get(conversationId);
    if (!c || c->title != kNewTitle) return;
    renameConversation(conversationId, titleFrom(basis));
}

// --- replies ---------------------------------------------------------------------------

ConversationContext SessionController::contextFor(qint64 conversationId, qint64 beforeMessageId) const {
    ConversationContext context;
    if (conversationId == m_current && m_document.state().usableInContext()) {
        if (std::optional<DocumentRecord> d = m_documentRepo.forConversation(conversationId)) {
            context.documentTitle = d->title;
            context.documentText = d->text;
        }
    }
    const std::vector<MessageRecord> rows = conversationId == m_current ? m_messages.messages()
                                                                        : m_messageRepo.forConversation(conversationId);
    for (const MessageRecord & m : rows) {
        if (beforeMessageId != 0 && m.id >= beforeMessageId) break;
        // Failed replies and those with no answer (thinking alone) are not part of what was said.
        if (m.state == MessageState::failed || m.state == MessageState::streaming || m.text.isEmpty()) continue;
        context.turns.push_back({m.role, m.text, m.thinking});
    }
    return context;
}

void SessionController::sendMessage(const QString & rawText) {
    const QString text = rawText.trimmed();
    if (text.isEmpty() || m_reply) return;
    const qint64 conversation = ensureConversation();
    if (conversation == 0) return;
    const ConversationContext context = contextFor(conversation);
    std::optional<MessageRecord> user = m_messageRepo.insert(
        {.conversationId = conversation, .role = QStringLiteral("user"), .text = text});
    if (!stored(user.has_value(), QStringLiteral("your message"))) return;
    m_messages.append(*user);
    retitleIfNew(conversation, text);
    startReply(JobKind::chat, context, text, m_settings);
}

void SessionController::startReply(JobKind kind, const ConversationContext & context, const QString & userText,
                                   const EngineSettings & settings) {
    std::optional<MessageRecord> reply = m_messageRepo.insert(
        {.conversationId = m_current, .role = QStringLiteral("assistant"), .state = MessageState::streaming});
    if (!stored(reply.has_value(), QStringLiteral("the reply"))) return;
    m_messages.append(*reply);
    m_conversations.moveToTop(m_current, reply->createdAt);
    EngineJob * job = nullptr;
    if (kind == JobKind::chat) {
        job = m_engine.chat({.conversationId = m_current, .context = context, .userText = userText, .settings = settings});
    } else {
        const std::optional<DocumentRecord> d = m_documentRepo.forConversation(m_current);
        job = m_engine.summarize(
            {.conversationId = m_current, .title = d ? d->title : QString(), .text = d ? d->text : QString(), .settings = settings});
        m_document.setSummarizing(m_current, true);
    }
    connect(job, &EngineJob::token, this, &SessionController::onToken);
    connect(job, &EngineJob::thinking, this, &SessionController::onThinking);
    connect(job, &EngineJob::progress, this, &SessionController::onReplyProgress);
    connect(job, &EngineJob::finished, this, &SessionController::onReplyFinished);
    connect(job, &EngineJob::failed, this, [this](const JobError & error) {
        endReply({.text = m_reply->text, .thinking = m_reply->thinking, .state = MessageState::failed, .note = error.message});
        emit errorOccurred(error.message);
    });
    m_reply = Reply{.job = job, .kind = kind, .conversationId = m_current, .messageId = reply->id};
    m_flushTimer.start();
    emit replyingChanged(true);
}

void SessionController::stop() {
    if (m_reply) m_reply->job->stop();
}

QString SessionController::lastPrompt() const {
    const std::vector<MessageRecord> & rows = m_messages.messages();
    for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
        if (it->role == QLatin1String("user")) return it->text;
    }
    return {};
}

bool SessionController::canRegenerate() const {
    const std::vector<MessageRecord> & rows = m_messages.messages();
    return !m_reply && rows.size() >= 2 && rows.back().role == QLatin1String("assistant") &&
           rows[rows.size() - 2].role == QLatin1String("user");
}

void SessionController::regenerate() {
    if (!canRegenerate()) return;
    const std::vector<MessageRecord> & rows = m_messages.messages();
    const MessageRecord answer = rows.back();
    const MessageRecord prompt = rows[rows.size() - 2];
    if (!stored(m_messageRepo.remove(answer.id), QStringLiteral("the removal of the old reply"))) return;
    m_messages.remove(answer.id);
    const bool summary = prompt.text.startsWith(QStringLiteral("Summarize \u201C"));
    // Another draw: with the settings' seed the sampler would give the same reply again.
    EngineSettings settings = m_settings;
    settings.sampler.seed = QRandomGenerator::global()->generate64();
    startReply(summary ? JobKind::summarize : JobKind::chat, contextFor(m_current, prompt.id), prompt.text, settings);
}

void SessionController::resendEdited(const QString & text) {
    if (m_reply || text.trimmed().isEmpty()) return;
    const std::vector<MessageRecord> rows = m_messages.messages();
    auto last = std::find_if(rows.rbegin(), rows.rend(), [](const MessageRecord & m) { return m.role == QLatin1String("user"); });
    if (last != rows.rend()) {
        for (auto it = rows.rbegin(); it != rows.rend() && it->id >= last->id; ++it) {
            if (!stored(m_messageRepo.remove(it->id), QStringLiteral("the edit"))) return;
            m_messages.remove(it->id);
        }
    }
    sendMessage(text);
}

void SessionController::onToken(const QString & piece) {
    m_reply->text += piece;
    m_reply->dirty = true;
    if (m_reply->conversationId == m_current) m_messages.appendText(m_reply->messageId, piece);
}

void SessionController::onThinking(const QString & piece) {
    m_reply->thinking += piece;
    m_reply->dirty = true;
    if (m_reply->conversationId == m_current) m_messages.appendThinking(m_reply->messageId, piece);
}

void SessionController::flush() {
    if (!m_reply || !m_reply->dirty) return;
    m_reply->dirty = false;
    stored(m_messageRepo.updateText(m_reply->messageId, m_reply->text, m_reply->thinking), QStringLiteral("the reply so far"));
}

void SessionController::endReply(const ReplyEnding & ending) {
    const Reply reply = *m_reply;
    m_reply.reset();
    reply.job->deleteLater();
    if (reply.kind == JobKind::summarize) m_document.setSummarizing(reply.conversationId, false);
    m_flushTimer.stop();
    stored(m_messageRepo.finish(reply.messageId, ending), QStringLiteral("the reply"));
    if (reply.conversationId == m_current) m_messages.finish(reply.messageId, ending);
    emit replyingChanged(false);
}

void SessionController::onReplyFinished(const JobResult & result) {
    const QString text = result.text.isEmpty() ? m_reply->text : result.text;
    const QString thinking = result.thinking.isEmpty() ? m_reply->thinking : result.thinking;
    const bool stopped = result.reason == StopReason::cancelled;
    QString note = result.kind == JobKind::summarize ? result.method : speedNote(result);
    if (result.reason == StopReason::context_full) {
        note += QStringLiteral(" \u2014 the context is full: start a new conversation or raise the context");
    } else if (result.reason == StopReason::max_tokens) {
        note += QStringLiteral(" \u2014 reached the reply length limit");
    }
    endReply({.text = text,
              .thinking = thinking,
              .state = stopped ? MessageState::stopped : MessageState::finished,
              .stopReason = stopReasonKey(result.reason),
              .note = note.trimmed()});
    onRetention(result.retention);
}

void SessionController::onModelFinished(const JobResult & result) {
    m_loadJob->deleteLater();
    m_loadJob = nullptr;
    m_startupLoad = false;
    if (result.reason == StopReason::cancelled) return;
    m_model = result.model;
    m_modelReady = true;
    m_appSettings.setLastModel(result.model.path);
    emit modelReady(m_model);
    emit weightsChanged(result.weights, result.model.path);
    // Token counts depend on the model: measure the document again.
    if (m_document.canReadAgain()) requestDocumentRead();
}

void SessionController::onModelFailed(const JobError & error) {
    m_loadJob->deleteLater();
    m_loadJob = nullptr;
    const bool fallBack = m_startupLoad && m_loadingPath != QLatin1String(kBundledModelPath);
    m_startupLoad = false;
    emit modelFailed(error.message);
    if (fallBack) {
        emit errorOccurred(QStringLiteral("%1 Using the bundled model instead.").arg(error.message));
        loadModel(QString::fromLatin1(kBundledModelPath));
    }
}

void SessionController::onReplyProgress(const JobProgress & progress) {
    if (!progress.summary) {
        const PrefillStatus & status = progress.prefill;
        if (m_reply->conversationId == m_current && status.total > 0) {
            const QString note = status.done < status.total
                                     ? QStringLiteral("Reading the prompt: %1 of %2 tokens").arg(status.done).arg(status.total)
                                     : QString();
            m_messages.setProgressNote(m_reply->messageId, note);
        }
        return;
    }
    const SummaryStatus & status = *progress.summary;
    const SummaryProgress & p = status.progress;
    QString note;
    if (p.method == SummaryMethod::one_pass) {
        note = QStringLiteral("One pass over the whole document");
    } else {
        const char * stage = p.stage == SummaryStage::map      ? "summarizing part"
                             : p.stage == SummaryStage::reduce ? "combining group"
                                                               : "final summary";
        note = QStringLiteral("Map-reduce: pass %1 of ~%2 (%3 %4 of %5)")
                   .arg(p.passes_done + 1)
                   .arg(p.passes_total)
                   .arg(QLatin1String(stage))
                   .arg(p.index + 1)
                   .arg(p.count);
        if (status.etaMs >= 0) note += QStringLiteral(", about %1 s left").arg(qRound(status.etaMs / 1000.0));
    }
    if (m_reply->conversationId == m_current) m_messages.setProgressNote(m_reply->messageId, note);
    emit summaryProgress(status);
}

// --- documents -------------------------------------------------------------------------

void SessionController::showDocument() {
    m_document.show(m_current, m_current ? m_documentRepo.forConversation(m_current) : std::nullopt);
    if (m_document.state().phase == DocumentPhase::reading) requestDocumentRead();
}

void SessionController::abandonReading(qint64 conversationId) {
    if (auto it = m_readingJobs.find(conversationId); it != m_readingJobs.end()) {
        it->second->abandon();
        m_readingJobs.erase(it);
    }
}

void SessionController::requestDocumentRead() {
    if (m_current == 0) return;
    abandonReading(m_current);
    ConversationContext context = contextFor(m_current);
    if (!context.hasDocument()) {
        const std::optional<DocumentRecord> d = m_documentRepo.forConversation(m_current);
        if (!d) return;
        context.documentTitle = d->title;
        context.documentText = d->text;
    }
    m_document.startReading();
    const qint64 conversation = m_current;
    EngineJob * job = m_engine.prefill({.conversationId = conversation, .context = context, .settings = m_settings});
    m_readingJobs[conversation] = job;
    const auto done = [this, conversation, job] {
        m_readingJobs.erase(conversation);
        job->deleteLater();
    };
    connect(job, &EngineJob::measured, this, [this, conversation](const ContextMeasure & measure) {
        if (std::optional<DocumentRecord> d = m_documentRepo.forConversation(conversation)) {
            stored(m_documentRepo.setTokenCount(d->id, measure.documentTokens), QStringLiteral("the token count"));
        }
        m_document.measured(conversation, measure);
    });
    connect(job, &EngineJob::progress, this,
            [this, conversation](const JobProgress & p) { m_document.progressed(conversation, p.prefill); });
    connect(job, &EngineJob::finished, this, [this, conversation, done](const JobResult & result) {
        done();
        onRetention(result.retention);
        m_document.read(conversation, result);
    });
    connect(job, &EngineJob::failed, this, [this, conversation, done](const JobError & error) {
        done();
        onRetention(error.retention);
        m_document.readFailed(conversation, error);
    });
}

void SessionController::attachDocument(const QString & path) {
    const qint64 conversation = ensureConversation();
    if (conversation == 0) return;
    m_document.open(conversation, path);
    auto * watcher = new QFutureWatcher<DocumentLoadResult>(this);
    connect(watcher, &QFutureWatcher<DocumentLoadResult>::finished, this, [this, watcher, conversation] {
        --m_documentLoadsInFlight;
        onDocumentLoaded(conversation, watcher->result());
        watcher->deleteLater();
    });
    ++m_documentLoadsInFlight;
    watcher->setFuture(QtConcurrent::run([path] { return loadDocument(path); }));
}

void SessionController::onDocumentLoaded(qint64 conversationId, const DocumentLoadResult & result) {
    if (!result.ok()) {
        m_document.openFailed(conversationId, result.error);
        emit errorOccurred(result.error);
        return;
    }
    const LoadedDocument & doc = *result.document;
    std::optional<DocumentRecord> record = m_documentRepo.attach({.conversationId = conversationId,
                                                                  .path = doc.path,
                                                                  .title = doc.title,
                                                                  .format = doc.format,
                                                                  .sha256 = doc.sha256,
                                                                  .fileBytes = doc.fileBytes,
                                                                  .text = doc.text});
    if (!stored(record.has_value(), QStringLiteral("the document"))) return;
    retitleIfNew(conversationId, doc.title);
    if (conversationId != m_current) return;
    showDocument();
    if (!doc.note.isEmpty()) m_document.note(doc.note);
}

void SessionController::removeDocument() {
    if (m_current == 0) return;
    abandonReading(m_current);
    stored(m_documentRepo.removeFor(m_current), QStringLiteral("the removal of the document"));
    showDocument();
}

void SessionController::readDocumentAgain() {
    if (m_document.canReadAgain()) requestDocumentRead();
}

void SessionController::stopReadingDocument() {
    if (auto it = m_readingJobs.find(m_current); it != m_readingJobs.end()) it->second->stop();
}

void SessionController::summarizeDocument() {
    if (!canSummarize()) return;
    const std::optional<DocumentRecord> d = m_documentRepo.forConversation(m_current);
    if (!d) return;
    const QString prompt = QStringLiteral("Summarize \u201C%1\u201D.").arg(d->title);
    std::optional<MessageRecord> user = m_messageRepo.insert({.conversationId = m_current, .role = QStringLiteral("user"), .text = prompt});
    if (!stored(user.has_value(), QStringLiteral("the request"))) return;
    m_messages.append(*user);
    startReply(JobKind::summarize, {}, prompt, m_settings);
}

void SessionController::onRetention(const std::optional<RetentionSnapshot> & retention) {
    if (!retention || retention->conversationId != m_current) return;
    m_retention = retention;
    emit retentionChanged(*retention);
}

// --- settings --------------------------------------------------------------------------

void SessionController::setSettings(const EngineSettings & settings) {
    if (!validationError(settings).isEmpty()) return;
    const bool contextChanged = settings.contextTokens != m_settings.contextTokens;
    m_settings = settings;
    if (m_current != 0) stored(m_settingsRepo.save(m_current, toJson(settings)), QStringLiteral("the settings"));
    emit settingsChanged(m_settings);
    // A document that did not fit may fit the new context: measure it again.
    if (contextChanged && m_document.state().phase == DocumentPhase::tooLong) requestDocumentRead();
}

void SessionController::saveSettingsAsDefaults() { m_appSettings.setEngineDefaults(m_settings); }

}  // namespace lr::app
