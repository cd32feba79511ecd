#include "retention_view.h"

#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

#include "ui/layer_kind_text.h"
#include "ui/shaded_text.h"
#include "ui/theme.h"

namespace lr::ui {

int RetentionView::levelOf(float kept) { return std::clamp(int(std::lround(kept * (kLevels - 1))), 0, kLevels - 1); }

std::vector<RetentionView::Run> RetentionView::runs(const app::RetentionSnapshot & r) {
    std::vector<Run> out;
    const int length = int(r.documentText.size());
    if (length == 0) return out;
    if (r.tokenSpans.empty() || r.tokenSpans.size() != r.kept.size()) {
        // Nothing per token: the document is wholly in or out of the context.
        out.push_back({0, length, r.inContext ? kLevels - 1 : 0});
        return out;
    }
    int at = 0;
    for (size_t i = 0; i < r.tokenSpans.size(); ++i) {
        const int level = levelOf(r.kept[i]);
        // A token's span runs to the next token's start, so whitespace between is covered.
        const int end = i + 1 < r.tokenSpans.size() ? std::clamp(r.tokenSpans[i + 1].first, at, length) : length;
        if (end <= at) continue;
        if (!out.empty() && out.back().level == level && out.back().end == at) {
            out.back().end = end;
        } else {
            out.push_back({at, end, level});
        }
        at = end;
    }
    if (at < length) out.push_back({at, length, out.empty() ? 0 : out.back().level});
    return out;
}

RetentionView::RetentionView(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("What the cache keeps of the document"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kPad, theme::kPad, theme::kPad, theme::kPad);
    layout->setSpacing(theme::kGap);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setAccessibleName(tr("Retention summary"));
    layout->addWidget(m_summary);
    m_layers = new QLabel(this);
    m_layers->setWordWrap(true);
    m_layers->setAccessibleName(tr("Layers shown"));
    layout->addWidget(m_layers);
    m_legend = new QLabel(this);
    m_legend->setFont(theme::captionFont(font()));
    layout->addWidget(m_legend);
    m_text = new ShadedText(this);
    m_text->setAccessibleName(tr("Document text, shaded by what the cache keeps"));
    layout->addWidget(m_text, 1);
    setRetention(std::nullopt);
    refreshStyle();
}

void RetentionView::setRetention(const std::optional<app::RetentionSnapshot> & retention) {
    const bool sameText = retention && m_retention && retention->documentText == m_retention->documentText;
    m_retention = retention;
    const QLocale locale;
    if (!retention || retention->documentText.isEmpty()) {
        m_summary->setText(tr("No document in this conversation. Open one to see which of its parts the KV cache keeps."));
        m_layers->clear();
        m_text->clear();
        m_runs.clear();
        return;
    }
    const app::RetentionSnapshot & r = *retention;
    const int tokens = int(r.kept.size());
    if (!r.inContext) {
        m_summary->setText(
            tr("<b>Not in the chat's context.</b> The model does not see this document now (it did not fit, "
               "or reading it was stopped), so nothing of it is kept."));
    } else if (!r.perPosition) {
        m_summary->setText(tr("<b>Everything is kept.</b> The policy (%1) keeps every token: all %2 tokens of the document are "
                              "in the KV cache. With an eviction policy, the parts it drops are faded here.")
                               .arg(r.policy.toHtmlEscaped(), locale.toString(tokens)));
    } else {
        m_summary->setText(tr("<b>%1% kept.</b> The policy (%2) keeps about %3 of the document's %4 tokens; faded text was evicted.")
                               .arg(100.0 * r.keptFraction(), 0, 'f', 0)
                               .arg(r.policy.toHtmlEscaped(), locale.toString(qRound(r.keptFraction() * tokens)), locale.toString(tokens)));
    }
    m_layers->setText(tr("Shaded by what the cache of the model's %1 keeps.").arg(layerKindLayers(r.layerKind)));
    if (!sameText) m_text->setPlainText(r.documentText);
    m_runs = runs(r);
    applyShading();
}

void RetentionView::applyShading() {
    const QPalette & p = palette();
    const QColor keptTint = theme::mix(p.color(QPalette::Base), theme::good(p), theme::isDark(p) ? 0.30 : 0.18);
    const QColor evictedText = theme::mix(p.color(QPalette::Text), p.color(QPalette::Base), 0.65);
    QTextCharFormat formats[kLevels];
    for (int level = 0; level < kLevels; ++level) {
        const double t = double(level) / (kLevels - 1);
        formats[level].setBackground(theme::mix(p.color(QPalette::Base), keptTint, t));
        formats[level].setForeground(theme::mix(evictedText, p.color(QPalette::Text), t));
    }
    std::vector<ShadedText::Span> spans;
    spans.reserve(m_runs.size());
    for (const Run & run : m_runs) spans.push_back({run.begin, run.end, formats[run.level]});
    m_text->setShading(std::move(spans));
    m_legend->setText(tr("<span style='background:%1'>&nbsp;kept&nbsp;</span>&nbsp;&nbsp;"
                         "<span style='color:%2'>evicted or outside the context</span>")
                          .arg(keptTint.name(), evictedText.name()));
}

void RetentionView::refreshStyle() { applyShading(); }

}  // namespace lr::ui
