#pragma once
// "Serve on this computer" (in the Settings tab): a switch, the port and the API key of the
// app's OpenAI-compatible server, then what a client needs — the address and the key, each
// with a copy button — or why it does not serve (a port in use, no model yet). It says
// that the server listens on 127.0.0.1 only and keeps a KV cache of its own.

#include <QWidget>

#include "app/core/app_settings.h"
#include "app/core/server_snapshot.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QToolButton;

namespace lr::ui {

class ServePanel : public QWidget {
    Q_OBJECT
public:
    explicit ServePanel(QWidget * parent = nullptr);

    // The stored settings (does not emit serveSettingsEdited).
    void setServeSettings(const app::ServeSettings & serve);
    void setState(const app::ServerState & state);
    void refreshStyle();

    QCheckBox * serveSwitch() const { return m_switch; }
    QSpinBox * portBox() const { return m_port; }
    QLineEdit * keyEdit() const { return m_key; }
    QLabel * statusLabel() const { return m_status; }
    QLabel * addressLabel() const { return m_address; }
    QToolButton * copyAddressButton() const { return m_copyAddress; }
    QToolButton * copyKeyButton() const { return m_copyKey; }

signals:
    // The user turned the switch, or finished editing the port or the key.
    void serveSettingsEdited(const lr::app::ServeSettings & serve);

private:
    app::ServeSettings edited() const;

    app::ServerState m_state;
    QCheckBox * m_switch;
    QSpinBox * m_port;
    QLineEdit * m_key;
    QToolButton * m_copyKey;
    QLabel * m_status;
    QLabel * m_address;
    QToolButton * m_copyAddress;
    QLabel * m_note;
};

}  // namespace lr::ui
