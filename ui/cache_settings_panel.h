#pragma once
// The conversation's settings: thinking (on, off, the reasoning effort: enabled where the
// loaded model's template offers them), sampling (temperature, top-k, top-p, min-p, repeat
// penalty) and the reply's length, then the cache sliders: context, prefill chunk (or
// automatic), policy, keep ratio, recent window,
// sink tokens, K/V bits, tier budgets, warm-up, the layer budget's shape, and placement
// (tier management, demotion order, prefetch). Each has a one-sentence tooltip; the
// planner's prediction for the loaded model updates as they move; changes apply to the
// conversation's next turn (the panel says so). Knobs this engine build does not apply yet
// are disabled and say why.

#include <QTimer>
#include <QWidget>

#include "app/core/engine_results.h"
#include "app/core/engine_settings.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QSpinBox;
class QPushButton;
class QLineEdit;

namespace lr::ui {

class CacheSettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit CacheSettingsPanel(QWidget * parent = nullptr);

    // The conversation's settings (does not emit settingsEdited).
    void setSettings(const app::EngineSettings & settings);
    // The model the prediction is for.
    void setModel(const app::ModelInfo & model);
    // The settings of every conversation (does not emit).
    void setEngineValues(int threads, const QString & cacheDirectory);
    app::EngineSettings settings() const;
    void refreshStyle();

    QLabel * predictionLabel() const { return m_prediction; }
    QComboBox * policyBox() const { return m_policy; }
    QSlider * keepSlider() const { return m_keep; }
    QSlider * recentSlider() const { return m_recent; }
    QSpinBox * contextBox() const { return m_context; }
    QSpinBox * chunkBox() const { return m_chunk; }
    QComboBox * kBitsBox() const { return m_kBits; }
    QComboBox * hostBitsBox() const { return m_hostBits; }
    QComboBox * demotionBox() const { return m_demotion; }
    QComboBox * prefetchBox() const { return m_prefetch; }
    QComboBox * adaptBox() const { return m_adapt; }
    QSpinBox * warmupBox() const { return m_warmup; }
    QComboBox * layerBudgetBox() const { return m_layerBudget; }
    QComboBox * thinkingBox() const { return m_thinking; }
    QComboBox * effortBox() const { return m_effort; }
    QDoubleSpinBox * temperatureBox() const { return m_temperature; }
    QDoubleSpinBox * topPBox() const { return m_topP; }
    QSpinBox * maxReplyBox() const { return m_maxReply; }

signals:
    // After the user changed something (debounced), with the valid settings.
    void settingsEdited(const lr::app::EngineSettings & settings);
    void saveAsDefaultsRequested();
    // CPU threads (0: automatic), for the next model load.
    void threadsEdited(int threads);
    // Where the disk tier and the prefix cache keep their files (empty: the default).
    void cacheDirectoryEdited(const QString & directory);

private:
    void edited();
    void updatePrediction();
    void updateLabels();
    // Enables the thinking choices the loaded model's template offers; the tooltips say why not.
    void updateThinkingTips();

    app::EngineSettings m_base;  // what the panel does not edit is kept from here
    app::ModelInfo m_model;
    // The machine as it was when the model was chosen: probing a GPU's free memory on every
    // slider step would stall the window.
    MachineMemory m_machine;
    bool m_hasModel = false;
    bool m_loading = false;
    QTimer m_debounce;
    QComboBox * m_thinking;
    QComboBox * m_effort;
    QDoubleSpinBox * m_temperature;
    QSpinBox * m_topK;
    QDoubleSpinBox * m_topP;
    QDoubleSpinBox * m_minP;
    QDoubleSpinBox * m_repeatPenalty;
    QSpinBox * m_maxReply;
    QSpinBox * m_context;
    QSpinBox * m_chunk;
    QComboBox * m_policy;
    QSlider * m_keep;
    QLabel * m_keepValue;
    QSlider * m_recent;
    QLabel * m_recentValue;
    QSpinBox * m_sinks;
    QComboBox * m_kBits;
    QComboBox * m_vBits;
    QSpinBox * m_device;
    QSpinBox * m_host;
    QSpinBox * m_disk;
    QComboBox * m_hostBits;
    QComboBox * m_diskBits;
    QSpinBox * m_threads;
    QLineEdit * m_cacheDir;
    QLabel * m_prediction;
    QLabel * m_nextTurn;
    QPushButton * m_defaults;
    // Placement's order and look-ahead, and the adaptive mode.
    QComboBox * m_demotion;
    QComboBox * m_prefetch;
    QComboBox * m_adapt;
    // Warm-up.
    QSpinBox * m_warmup;
    // Per-layer budgets.
    QComboBox * m_layerBudget;
};

}  // namespace lr::ui
