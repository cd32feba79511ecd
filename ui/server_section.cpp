#include "server_section.h"

#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

#include "app/core/model_list_model.h"
#include "ui/theme.h"

namespace lr::ui {

ServerSection::ServerSection(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("Server"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    auto * title = new QLabel(tr("Server"), this);
    QFont bold = title->font();
    bold.setWeight(QFont::DemiBold);
    title->setFont(bold);
    layout->addWidget(title);
    m_address = new QLabel(this);
    m_address->setWordWrap(true);
    m_address->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_address);

    auto * form = new QFormLayout;
    form->setHorizontalSpacing(theme::kPad);
    form->setVerticalSpacing(4);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    auto value = [&](const QString & label, const QString & tip) {
        auto * v = new QLabel(QStringLiteral("\u2014"), this);
        v->setAccessibleName(label);
        v->setToolTip(tip);
        v->setTextInteractionFlags(Qt::TextSelectableByMouse);
        v->setWordWrap(true);
        form->addRow(label, v);
        return v;
    };
    m_summary = value(tr("Sequences"), tr("Requests generating now, and those waiting for room in the server's cache"));
    m_served = value(tr("Served"), tr("Completions answered since the server started"));
    m_hitRate = value(tr("Hit rate"), tr("Of the KV blocks the server's attention read, the share already on the device tier"));
    layout->addLayout(form);
    m_sequences = new QWidget(this);
    auto * rows = new QVBoxLayout(m_sequences);
    rows->setContentsMargins(0, 0, 0, 0);
    rows->setSpacing(2);
    layout->addWidget(m_sequences);
    setVisible(false);
}

void ServerSection::setState(const app::ServerState & state) {
    const bool serving = state.kind == app::ServerState::Kind::serving;
    setVisible(serving);
    if (!serving) showSequences({});
    m_address->setText(tr("At %1, with a KV cache of its own (not the chat's).").arg(state.address));
}

void ServerSection::setSnapshot(const app::ServerSnapshot & s) {
    const QLocale locale;
    m_summary->setText(tr("%1 running, %2 waiting").arg(s.running).arg(s.queued));
    m_served->setText(s.completionsServed == 1 ? tr("1 completion")
                                               : tr("%1 completions").arg(locale.toString(qulonglong(s.completionsServed))));
    m_hitRate->setText(s.kv.block_reads == 0 ? tr("\u2014 (no block reads counted yet)")
                                             : tr("%1% (%2 tokens restored)")
                                                   .arg(100.0 * s.kv.hit_rate(), 0, 'f', 1)
                                                   .arg(locale.toString(qulonglong(s.kv.restored_tokens))));
    showSequences(s.sequences);
}

QStringList ServerSection::sequenceRows() const {
    QStringList rows;
    for (const QLabel * l : m_sequenceRows) rows << l->text();
    return rows;
}

void ServerSection::showSequences(const std::vector<SequenceStats> & sequences) {
    while (m_sequenceRows.size() > qsizetype(sequences.size())) delete m_sequenceRows.takeLast();
    while (m_sequenceRows.size() < qsizetype(sequences.size())) {
        auto * row = new QLabel(m_sequences);
        row->setTextInteractionFlags(Qt::TextSelectableByMouse);
        row->setWordWrap(true);
        m_sequences->layout()->addWidget(row);
        m_sequenceRows << row;
    }
    const QLocale locale;
    for (size_t i = 0; i < sequences.size(); ++i) {
        const SequenceStats & q = sequences[i];
        QLabel * row = m_sequenceRows[qsizetype(i)];
        row->setText(tr("#%1: %2 tokens held, %3, %4")
                         .arg(q.id)
                         .arg(locale.toString(q.tokens_held), app::formatBytes(q.kv_bytes), QString::fromStdString(q.policy)));
        row->setToolTip(tr("Prompt: %1 of %2 tokens read; %3 generated; %4 positions kept per layer and head")
                            .arg(locale.toString(q.prompt_read), locale.toString(q.prompt_tokens), locale.toString(q.generated_tokens),
                                 locale.toString(q.tokens_kept)));
    }
}

}  // namespace lr::ui
