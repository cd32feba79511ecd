#include "serve_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/theme.h"

namespace lr::ui {
namespace {

QToolButton * copyButton(const QString & what, QWidget * parent) {
    auto * b = new QToolButton(parent);
    b->setText(QObject::tr("Copy"));
    b->setAccessibleName(QObject::tr("Copy the %1").arg(what));
    b->setToolTip(QObject::tr("Copy the %1 to the clipboard").arg(what));
    return b;
}

}  // namespace

ServePanel::ServePanel(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("Serve on this computer"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kPad, theme::kPad, theme::kPad, theme::kPad);
    layout->setSpacing(theme::kGap);

    m_switch = new QCheckBox(tr("Serve on this computer"), this);
    m_switch->setAccessibleName(tr("Serve on this computer"));
    m_switch->setToolTip(tr("Answer OpenAI-compatible clients (/v1/chat/completions, /v1/completions, /v1/models) with the loaded model"));
    QFont bold = m_switch->font();
    bold.setWeight(QFont::DemiBold);
    m_switch->setFont(bold);
    layout->addWidget(m_switch);

    m_note = new QLabel(tr("Only programs on this computer can connect (127.0.0.1), with the key below. The server runs the loaded "
                           "model with a KV cache of its own, separate from the chat's, using the cache settings new conversations start "
                           "with."),
                        this);
    m_note->setWordWrap(true);
    layout->addWidget(m_note);

    auto * form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_port = new QSpinBox(this);
    m_port->setRange(1, 65535);
    m_port->setValue(8080);
    m_port->setAccessibleName(tr("Port"));
    m_port->setToolTip(tr("The TCP port on 127.0.0.1 the server listens on"));
    form->addRow(tr("Port"), m_port);
    auto * keyRow = new QHBoxLayout;
    m_key = new QLineEdit(this);
    m_key->setPlaceholderText(tr("made when serving starts"));
    m_key->setAccessibleName(tr("API key"));
    m_key->setToolTip(tr("Clients send it as \"Authorization: Bearer KEY\"; leave it empty for a new random one"));
    m_copyKey = copyButton(tr("API key"), this);
    keyRow->addWidget(m_key, 1);
    keyRow->addWidget(m_copyKey);
    form->addRow(tr("API key"), keyRow);
    auto * addressRow = new QHBoxLayout;
    m_address = new QLabel(this);
    m_address->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_address->setAccessibleName(tr("Server address"));
    m_copyAddress = copyButton(tr("address"), this);
    addressRow->addWidget(m_address, 1);
    addressRow->addWidget(m_copyAddress);
    form->addRow(tr("Address"), addressRow);
    layout->addLayout(form);

    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->setAccessibleName(tr("Server status"));
    layout->addWidget(m_status);
    layout->addStretch(1);

    connect(m_switch, &QCheckBox::toggled, this, [this] { emit serveSettingsEdited(edited()); });
    connect(m_port, &QSpinBox::editingFinished, this, [this] { emit serveSettingsEdited(edited()); });
    connect(m_key, &QLineEdit::editingFinished, this, [this] { emit serveSettingsEdited(edited()); });
    connect(m_copyKey, &QToolButton::clicked, this, [this] { QApplication::clipboard()->setText(m_key->text()); });
    connect(m_copyAddress, &QToolButton::clicked, this, [this] { QApplication::clipboard()->setText(m_state.address); });
    setState({});
    refreshStyle();
}

app::ServeSettings ServePanel::edited() const {
    return {.enabled = m_switch->isChecked(), .port = m_port->value(), .apiKey = m_key->text().trimmed()};
}

void ServePanel::setServeSettings(const app::ServeSettings & serve) {
    const QSignalBlocker blockSwitch(m_switch), blockPort(m_port), blockKey(m_key);
    m_switch->setChecked(serve.enabled);
    m_port->setValue(serve.port);
    m_key->setText(serve.apiKey);
}

void ServePanel::setState(const app::ServerState & state) {
    using Kind = app::ServerState::Kind;
    m_state = state;
    // The key made when serving started shows where the user typed one.
    if (state.kind == Kind::serving && m_key->text().trimmed() != state.apiKey) {
        const QSignalBlocker block(m_key);
        m_key->setText(state.apiKey);
    }
    m_address->setText(state.kind == Kind::serving ? state.address : QStringLiteral("\u2014"));
    m_copyAddress->setEnabled(state.kind == Kind::serving);
    switch (state.kind) {
        case Kind::off: m_status->setText(tr("Not serving.")); break;
        case Kind::waitingForModel: m_status->setText(tr("Serves once a model is loaded.")); break;
        case Kind::starting: m_status->setText(tr("Starting\u2026")); break;
        case Kind::serving:
            m_status->setText(tr("Serving at %1. Point an OpenAI client's base URL there, with the key above.").arg(state.address));
            break;
        case Kind::failed: m_status->setText(tr("Not serving: %1").arg(state.message)); break;
    }
    refreshStyle();
}

void ServePanel::refreshStyle() {
    const QPalette & p = palette();
    QPalette caption = m_note->palette();
    caption.setColor(QPalette::WindowText, theme::subtleText(p));
    m_note->setPalette(caption);
    QPalette status = m_status->palette();
    status.setColor(QPalette::WindowText, m_state.kind == app::ServerState::Kind::failed ? theme::bad(p) : p.color(QPalette::WindowText));
    m_status->setPalette(status);
}

}  // namespace lr::ui
