#include "cache_settings_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/core/model_list_model.h"
#include "ui/layer_kind_text.h"
#include "ui/theme.h"

namespace lr::ui {
namespace {

QSpinBox * mibBox(QWidget * parent) {
    auto * b = new QSpinBox(parent);
    b->setRange(0, 1 << 20);
    b->setSingleStep(256);
    b->setSuffix(QObject::tr(" MiB"));
    b->setSpecialValueText(QObject::tr("automatic"));
    return b;
}

// A combo box of bit widths: (label, bits) in order.
QComboBox * bitsBox(QWidget * parent, std::initializer_list<std::pair<QString, int>> choices) {
    auto * b = new QComboBox(parent);
    for (const auto & [label, bits] : choices) b->addItem(label, bits);
    return b;
}

// The device codecs: 16, 8 or 4 bits.
QComboBox * codecBitsBox(QWidget * parent) {
    return bitsBox(parent, {{QObject::tr("16-bit (f16)"), 16}, {QObject::tr("8-bit (q8)"), 8}, {QObject::tr("4-bit (q4)"), 4}});
}

// A lower tier's codec: as the device tier (0), or at most 8 or 4 bits.
QComboBox * tierBitsBox(QWidget * parent) {
    return bitsBox(parent, {{QObject::tr("as the device tier"), 0},
                            {QObject::tr("at most 8-bit (q8)"), 8},
                            {QObject::tr("at most 4-bit (q4)"), 4}});
}

void setTip(QWidget * w, const QString & name, const QString & tip) {
    w->setToolTip(tip);
    w->setAccessibleName(name);
    w->setAccessibleDescription(tip);
}

}  // namespace

CacheSettingsPanel::CacheSettingsPanel(QWidget * parent) : QWidget(parent) {
    setAccessibleName(tr("Cache settings"));
    auto * layout = new QVBoxLayout(this);
    layout->setContentsMargins(theme::kPad, theme::kPad, theme::kPad, theme::kPad);
    layout->setSpacing(theme::kGap);

    m_nextTurn = new QLabel(tr("Changes apply to this conversation from its next turn."), this);
    m_nextTurn->setWordWrap(true);
    layout->addWidget(m_nextTurn);

    auto * form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setVerticalSpacing(theme::kGap);

    m_thinking = new QComboBox(this);
    m_thinking->addItem(tr("model's default"), -1);
    m_thinking->addItem(tr("on"), 1);
    m_thinking->addItem(tr("off"), 0);
    form->addRow(tr("Thinking"), m_thinking);
    m_effort = new QComboBox(this);
    m_effort->addItem(tr("model's default"), QString());
    m_effort->addItem(tr("low"), QStringLiteral("low"));
    m_effort->addItem(tr("medium"), QStringLiteral("medium"));
    m_effort->addItem(tr("high"), QStringLiteral("high"));
    form->addRow(tr("Reasoning effort"), m_effort);
    updateThinkingTips();

    // Sampling, as llama.cpp names and orders it.
    auto decimal = [this](double max, double step, int decimals) {
        auto * b = new QDoubleSpinBox(this);
        b->setRange(0, max);
        b->setSingleStep(step);
        b->setDecimals(decimals);
        return b;
    };
    m_temperature = decimal(2, 0.05, 2);
    m_temperature->setSpecialValueText(tr("0 (greedy)"));
    setTip(m_temperature, tr("Temperature"), tr("How adventurous the replies are: 0 always takes the likeliest token."));
    form->addRow(tr("Temperature"), m_temperature);
    m_topK = new QSpinBox(this);
    m_topK->setRange(0, 100000);
    m_topK->setSpecialValueText(tr("off"));
    setTip(m_topK, tr("Top-k"), tr("Sample among the k likeliest tokens only."));
    form->addRow(tr("Top-k"), m_topK);
    m_topP = decimal(1, 0.05, 2);
    setTip(m_topP, tr("Top-p"), tr("Sample among the likeliest tokens whose probabilities add up to p (1 turns it off)."));
    form->addRow(tr("Top-p"), m_topP);
    m_minP = decimal(1, 0.01, 2);
    m_minP->setSpecialValueText(tr("off"));
    setTip(m_minP, tr("Min-p"), tr("Drop tokens less likely than this share of the likeliest one."));
    form->addRow(tr("Min-p"), m_minP);
    m_repeatPenalty = decimal(5, 0.05, 2);
    m_repeatPenalty->setMinimum(0.05);
    setTip(m_repeatPenalty, tr("Repeat penalty"), tr("Makes recently used tokens less likely (1 turns it off)."));
    form->addRow(tr("Repeat penalty"), m_repeatPenalty);
    m_maxReply = new QSpinBox(this);
    m_maxReply->setRange(0, 1 << 24);
    m_maxReply->setSingleStep(256);
    m_maxReply->setSuffix(tr(" tokens"));
    m_maxReply->setSpecialValueText(tr("until the context is full"));
    setTip(m_maxReply, tr("Reply length"), tr("The most tokens a reply may take."));
    form->addRow(tr("Reply length"), m_maxReply);

    m_context = new QSpinBox(this);
    m_context->setRange(0, 1 << 24);
    m_context->setSingleStep(512);
    m_context->setSpecialValueText(tr("model's trained context"));
    m_context->setSuffix(tr(" tokens"));
    setTip(m_context, tr("Context"), tr("How many tokens the conversation may hold: the document, the questions and the answers."));
    form->addRow(tr("Context"), m_context);

    m_chunk = new QSpinBox(this);
    m_chunk->setRange(int(kAutoChunk), 8192);
    m_chunk->setSingleStep(64);
    m_chunk->setSuffix(tr(" tokens"));
    m_chunk->setSpecialValueText(tr("Automatic"));
    setTip(m_chunk, tr("Prefill chunk"),
           tr("Tokens evaluated per step when reading; larger is faster, smaller lets Stop act sooner. "
              "Automatic sizes it from each prompt's length and this computer's measured speed, so that Stop stays quick."));
    form->addRow(tr("Prefill chunk"), m_chunk);

    m_policy = new QComboBox(this);
    m_policy->addItem(tr("none \u2014 keep every token"), int(KvPolicy::none));
    m_policy->addItem(tr("H2O \u2014 heavy hitters + recent"), int(KvPolicy::h2o));
    m_policy->addItem(tr("SnapKV \u2014 keep what the prompt's end attends"), int(KvPolicy::snapkv));
    m_policy->addItem(tr("StreamingLLM \u2014 sinks + sliding window"), int(KvPolicy::streaming));
    m_policy->addItem(tr("Quest \u2014 keep all, read the top blocks"), int(KvPolicy::quest));
    setTip(m_policy, tr("Eviction policy"), tr("Which token positions the cache drops when it is over its budget."));
    form->addRow(tr("Policy"), m_policy);

    auto sliderRow = [this](QSlider *& slider, QLabel *& value, int min, int max) {
        auto * row = new QHBoxLayout;
        slider = new QSlider(Qt::Horizontal, this);
        slider->setRange(min, max);
        value = new QLabel(this);
        value->setMinimumWidth(QFontMetrics(font()).horizontalAdvance(QStringLiteral("100%")) + 4);
        row->addWidget(slider, 1);
        row->addWidget(value);
        return row;
    };
    form->addRow(tr("Keep ratio"), sliderRow(m_keep, m_keepValue, 5, 100));
    setTip(m_keep, tr("Keep ratio"),
           tr("The share of the sequence the policy keeps in the cache, the rest evicted (H2O, SnapKV, StreamingLLM); "
              "for Quest, which evicts nothing, the share each KV head reads per token."));
    form->addRow(tr("Recent window"), sliderRow(m_recent, m_recentValue, 0, 100));
    setTip(m_recent, tr("Recent window"), tr("The share of the budget reserved for the most recent tokens (H2O)."));

    // Per-layer budgets.
    m_layerBudget = new QComboBox(this);
    m_layerBudget->addItem(tr("uniform \u2014 every layer the same"), int(KvLayerBudget::uniform));
    m_layerBudget->addItem(tr("pyramid \u2014 lower layers keep more"), int(KvLayerBudget::pyramid));
    m_layerBudget->addItem(tr("inverse \u2014 upper layers keep more"), int(KvLayerBudget::inverse));
    setTip(m_layerBudget, tr("Layer budget"),
           tr("How the budget is spread over the layers, the total unchanged (H2O, SnapKV): pyramid keeps more in the lower "
              "layers (PyramidKV), inverse more in the upper ones."));
    form->addRow(tr("Layer budget"), m_layerBudget);

    m_sinks = new QSpinBox(this);
    m_sinks->setRange(0, 1024);
    setTip(m_sinks, tr("Sink tokens"), tr("The first tokens, which attention leans on, are never evicted."));
    form->addRow(tr("Sink tokens"), m_sinks);

    m_kBits = codecBitsBox(this);
    setTip(m_kBits, tr("Key bits"), tr("How precisely keys are stored: fewer bits fit more context in the same memory."));
    form->addRow(tr("K bits"), m_kBits);
    m_vBits = codecBitsBox(this);
    setTip(m_vBits, tr("Value bits"), tr("How precisely values are stored: 4-bit values halve the cache again with little loss."));
    form->addRow(tr("V bits"), m_vBits);

    m_device = mibBox(this);
    setTip(m_device, tr("Device tier budget"), tr("Memory for the tier attention reads from (VRAM, or the hot RAM arena)."));
    form->addRow(tr("Device tier"), m_device);
    m_host = mibBox(this);
    setTip(m_host, tr("Host tier budget"), tr("RAM behind the device tier, where colder blocks wait."));
    form->addRow(tr("Host tier"), m_host);
    m_disk = mibBox(this);
    setTip(m_disk, tr("Disk tier budget"),
           tr("Cache files on disk for what does not fit in RAM, and for restoring documents read before."));
    form->addRow(tr("Disk tier"), m_disk);
    m_hostBits = tierBitsBox(this);
    setTip(m_hostBits, tr("Host tier bits"),
           tr("Blocks older than the full-precision window that move to RAM are stored with at most these bits: "
              "more context in the same RAM, at a small cost in precision."));
    form->addRow(tr("Host tier bits"), m_hostBits);
    m_diskBits = tierBitsBox(this);
    setTip(m_diskBits, tr("Disk tier bits"),
           tr("Blocks older than the full-precision window that spill to disk are stored with at most these bits: "
              "less disk traffic, at a small cost in precision."));
    form->addRow(tr("Disk tier bits"), m_diskBits);

    m_adapt = new QComboBox(this);
    m_adapt->addItem(tr("Fixed \u2014 as set here"), false);
    m_adapt->addItem(tr("Automatic \u2014 from what the cache measures"), true);
    setTip(m_adapt, tr("Tier management"),
           tr("Automatic moves the RAM budget between the device and host tiers, picks the prefetch depth and the recent "
              "window from the context length, hit rate and waits it measures; the cache panel lists each decision."));
    form->addRow(tr("Tier management"), m_adapt);
    m_demotion = new QComboBox(this);
    m_demotion->addItem(tr("Layer cycle \u2014 what the next pass needs last"), int(KvDemotion::cycle));
    m_demotion->addItem(tr("LRU \u2014 least recently used"), int(KvDemotion::lru));
    m_demotion->addItem(tr("FIFO \u2014 oldest first"), int(KvDemotion::fifo));
    setTip(m_demotion, tr("Demotion order"),
           tr("Which blocks move down a tier first when it is full. Answers are the same whatever the order; only the moves differ."));
    form->addRow(tr("Demotion order"), m_demotion);
    m_prefetch = new QComboBox(this);
    m_prefetch->addItem(tr("none"), 0);
    m_prefetch->addItem(tr("next layer"), 1);
    m_prefetch->addItem(tr("next two layers"), 2);
    setTip(m_prefetch, tr("Prefetch"), tr("Blocks of the layers after the one computing are copied to the device tier in the background."));
    form->addRow(tr("Prefetch"), m_prefetch);
    // Warm-up.
    m_warmup = new QSpinBox(this);
    m_warmup->setRange(0, 1 << 20);
    m_warmup->setSingleStep(32);
    m_warmup->setSuffix(tr(" tokens"));
    m_warmup->setSpecialValueText(tr("none"));
    setTip(m_warmup, tr("Warm-up"), tr("Nothing is evicted or stored with fewer bits until the conversation holds this many tokens."));
    form->addRow(tr("Warm-up"), m_warmup);
    layout->addLayout(form);

    auto * predictionTitle = new QLabel(tr("Planner's prediction"), this);
    QFont bold = predictionTitle->font();
    bold.setWeight(QFont::DemiBold);
    predictionTitle->setFont(bold);
    layout->addWidget(predictionTitle);
    m_prediction = new QLabel(this);
    m_prediction->setWordWrap(true);
    m_prediction->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_prediction->setAccessibleName(tr("Planner's prediction"));
    layout->addWidget(m_prediction);

    m_defaults = new QPushButton(tr("Use these for new conversations"), this);
    m_defaults->setAccessibleName(tr("Save as defaults"));
    m_defaults->setToolTip(tr("New conversations will start with these settings."));
    layout->addWidget(m_defaults, 0, Qt::AlignLeft);

    auto * engineTitle = new QLabel(tr("All conversations"), this);
    engineTitle->setFont(bold);
    layout->addWidget(engineTitle);
    auto * engineForm = new QFormLayout;
    engineForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_threads = new QSpinBox(this);
    m_threads->setRange(0, 256);
    m_threads->setSpecialValueText(tr("automatic (physical cores)"));
    setTip(m_threads, tr("CPU threads"), tr("Threads the engine computes with; applies when a model is next loaded."));
    engineForm->addRow(tr("CPU threads"), m_threads);
    auto * dirRow = new QHBoxLayout;
    m_cacheDir = new QLineEdit(this);
    m_cacheDir->setPlaceholderText(QString::fromStdString(resolve_kv_dir(KvSettings{})));
    setTip(m_cacheDir, tr("Cache folder"), tr("Where the disk tier and the prefix cache keep their files; empty uses the default."));
    auto * browse = new QToolButton(this);
    browse->setText(QStringLiteral("…"));
    setTip(browse, tr("Choose the cache folder"), tr("Choose the folder for the KV cache's files."));
    dirRow->addWidget(m_cacheDir, 1);
    dirRow->addWidget(browse);
    engineForm->addRow(tr("Cache folder"), dirRow);
    layout->addLayout(engineForm);
    connect(m_threads, &QSpinBox::valueChanged, this, [this](int value) {
        if (!m_loading) emit threadsEdited(value);
    });
    connect(m_cacheDir, &QLineEdit::editingFinished, this, [this] { emit cacheDirectoryEdited(m_cacheDir->text().trimmed()); });
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the KV cache"), m_cacheDir->text());
        if (dir.isEmpty()) return;
        m_cacheDir->setText(dir);
        emit cacheDirectoryEdited(dir);
    });
    layout->addStretch(1);

    m_debounce.setSingleShot(true);
    m_debounce.setInterval(150);
    connect(&m_debounce, &QTimer::timeout, this, [this] {
        const app::EngineSettings s = settings();
        if (app::validationError(s).isEmpty()) emit settingsEdited(s);
    });
    for (QSpinBox * b : {m_topK, m_maxReply, m_context, m_chunk, m_sinks, m_device, m_host, m_disk, m_warmup})
        connect(b, &QSpinBox::valueChanged, this, &CacheSettingsPanel::edited);
    for (QComboBox * b :
         {m_thinking, m_effort, m_policy, m_kBits, m_vBits, m_hostBits, m_diskBits, m_adapt, m_demotion, m_prefetch, m_layerBudget})
        connect(b, &QComboBox::currentIndexChanged, this, &CacheSettingsPanel::edited);
    for (QSlider * s : {m_keep, m_recent}) connect(s, &QSlider::valueChanged, this, &CacheSettingsPanel::edited);
    for (QDoubleSpinBox * b : {m_temperature, m_topP, m_minP, m_repeatPenalty})
        connect(b, &QDoubleSpinBox::valueChanged, this, &CacheSettingsPanel::edited);
    connect(m_defaults, &QPushButton::clicked, this, &CacheSettingsPanel::saveAsDefaultsRequested);
    setSettings(app::EngineSettings{});
    refreshStyle();
}

void CacheSettingsPanel::setSettings(const app::EngineSettings & s) {
    m_loading = true;
    m_base = s;
    m_thinking->setCurrentIndex(m_thinking->findData(s.thinking.enabled ? int(*s.thinking.enabled) : -1));
    m_effort->setCurrentIndex(std::max(0, m_effort->findData(QString::fromStdString(s.thinking.effort))));
    m_temperature->setValue(s.sampler.temperature);
    m_topK->setValue(s.sampler.top_k);
    m_topP->setValue(s.sampler.top_p);
    m_minP->setValue(s.sampler.min_p);
    m_repeatPenalty->setValue(s.sampler.repeat_penalty);
    m_maxReply->setValue(std::max(0, s.maxReplyTokens));
    m_context->setValue(int(s.contextTokens));
    m_chunk->setValue(int(s.chunkTokens));
    m_policy->setCurrentIndex(m_policy->findData(int(s.kv.policy)));
    m_keep->setValue(int(std::lround(s.kv.keep_ratio * 100)));
    m_recent->setValue(int(std::lround(s.kv.recent_ratio * 100)));
    m_sinks->setValue(int(s.kv.sink_tokens));
    m_kBits->setCurrentIndex(std::max(0, m_kBits->findData(int(s.kv.k_bits))));
    m_vBits->setCurrentIndex(std::max(0, m_vBits->findData(int(s.kv.v_bits))));
    m_device->setValue(int(s.kv.device_mib));
    m_host->setValue(int(s.kv.host_mib));
    m_disk->setValue(int(s.kv.disk_mib));
    m_hostBits->setCurrentIndex(std::max(0, m_hostBits->findData(int(s.kv.host_bits))));
    m_diskBits->setCurrentIndex(std::max(0, m_diskBits->findData(int(s.kv.disk_bits))));
    m_adapt->setCurrentIndex(s.kv.adapt ? 1 : 0);
    m_demotion->setCurrentIndex(std::max(0, m_demotion->findData(int(s.kv.demotion))));
    m_prefetch->setCurrentIndex(std::max(0, m_prefetch->findData(int(s.kv.prefetch_layers))));
    m_warmup->setValue(int(s.kv.warmup_tokens));
    m_layerBudget->setCurrentIndex(std::max(0, m_layerBudget->findData(int(s.kv.layer_budget))));
    m_loading = false;
    updateLabels();
    updatePrediction();
}

void CacheSettingsPanel::setEngineValues(int threads, const QString & cacheDirectory) {
    m_loading = true;
    m_threads->setValue(threads);
    m_cacheDir->setText(cacheDirectory);
    m_loading = false;
}

void CacheSettingsPanel::setModel(const app::ModelInfo & model) {
    m_model = model;
    m_machine = app::probeMachine(settings());
    m_hasModel = true;
    updateThinkingTips();
    updatePrediction();
}

void CacheSettingsPanel::updateThinkingTips() {
    m_thinking->setEnabled(m_hasModel && m_model.thinkingSwitch);
    m_effort->setEnabled(m_hasModel && m_model.reasoningEffort);
    const QString none = m_hasModel ? tr(" This model's chat template has no such choice.")
                                    : tr(" Load a model to see whether it has one.");
    setTip(m_thinking, tr("Thinking"),
           tr("Whether the model thinks before it answers (Qwen3, Qwen3.5, Gemma 4): off answers sooner.") +
               (m_thinking->isEnabled() ? QString() : none));
    setTip(m_effort, tr("Reasoning effort"),
           tr("How long the model thinks before it answers (gpt-oss).") + (m_effort->isEnabled() ? QString() : none));
}

app::EngineSettings CacheSettingsPanel::settings() const {
    app::EngineSettings s = m_base;
    const int thinking = m_thinking->currentData().toInt();
    s.thinking.enabled = thinking < 0 ? std::nullopt : std::optional<bool>(thinking == 1);
    s.thinking.effort = m_effort->currentData().toString().toStdString();
    s.sampler.temperature = float(m_temperature->value());
    s.sampler.top_k = m_topK->value();
    s.sampler.top_p = float(m_topP->value());
    s.sampler.min_p = float(m_minP->value());
    s.sampler.repeat_penalty = float(m_repeatPenalty->value());
    s.maxReplyTokens = m_maxReply->value();
    s.contextTokens = uint32_t(m_context->value());
    s.chunkTokens = uint32_t(m_chunk->value());
    s.kv.policy = KvPolicy(m_policy->currentData().toInt());
    s.kv.keep_ratio = m_keep->value() / 100.0;
    s.kv.recent_ratio = m_recent->value() / 100.0;
    s.kv.sink_tokens = uint32_t(m_sinks->value());
    s.kv.k_bits = uint32_t(m_kBits->currentData().toInt());
    s.kv.v_bits = uint32_t(m_vBits->currentData().toInt());
    s.kv.device_mib = m_device->value();
    s.kv.host_mib = m_host->value();
    s.kv.disk_mib = m_disk->value();
    s.kv.host_bits = uint32_t(m_hostBits->currentData().toInt());
    s.kv.disk_bits = uint32_t(m_diskBits->currentData().toInt());
    s.kv.adapt = m_adapt->currentData().toBool();
    s.kv.demotion = KvDemotion(m_demotion->currentData().toInt());
    s.kv.prefetch_layers = uint32_t(m_prefetch->currentData().toInt());
    s.kv.warmup_tokens = uint32_t(m_warmup->value());
    s.kv.layer_budget = KvLayerBudget(m_layerBudget->currentData().toInt());
    return s;
}

void CacheSettingsPanel::edited() {
    if (m_loading) return;
    updateLabels();
    updatePrediction();
    m_debounce.start();
}

void CacheSettingsPanel::updateLabels() {
    m_keepValue->setText(QStringLiteral("%1%").arg(m_keep->value()));
    m_recentValue->setText(QStringLiteral("%1%").arg(m_recent->value()));
    const auto policy = KvPolicy(m_policy->currentData().toInt());
    m_keep->setEnabled(policy != KvPolicy::none);  // quest: the share it reads
    m_recent->setEnabled(policy == KvPolicy::h2o);
    m_layerBudget->setEnabled(policy == KvPolicy::h2o || policy == KvPolicy::snapkv);
}

void CacheSettingsPanel::updatePrediction() {
    const app::EngineSettings s = settings();
    const QPalette & p = palette();
    QPalette lp = m_prediction->palette();
    if (const QString error = app::validationError(s); !error.isEmpty()) {
        lp.setColor(QPalette::WindowText, theme::bad(p));
        m_prediction->setPalette(lp);
        m_prediction->setText(error);
        return;
    }
    if (!m_hasModel) {
        lp.setColor(QPalette::WindowText, theme::subtleText(p));
        m_prediction->setPalette(lp);
        m_prediction->setText(tr("Load a model to see what these settings need."));
        return;
    }
    const MemoryPlan plan = app::planFor(m_model.shape, s, m_machine);
    const QColor tone = plan.verdict == MemoryVerdict::fits         ? theme::good(p)
                        : plan.verdict == MemoryVerdict::needs_disk ? theme::caution(p)
                                                                    : theme::bad(p);
    lp.setColor(QPalette::WindowText, tone);
    m_prediction->setPalette(lp);
    const uint32_t ctx = s.contextTokens ? s.contextTokens : m_model.nCtxTrain;
    const QString reach = policyReachText(plan.layer_kinds);
    m_prediction->setText(tr("%1\n%2 at %3 tokens: weights %4, KV cache %5 (%6 per token), scratch %7.")
                              .arg(app::verdictText(plan), m_model.name, QLocale().toString(ctx), app::formatBytes(plan.weight_bytes),
                                   app::formatBytes(plan.kv_bytes), app::formatBytes(plan.kv_bytes_per_token),
                                   app::formatBytes(plan.scratch_bytes)) +
                          (plan.verdict == MemoryVerdict::fits ? QString() : QStringLiteral("\n") + QString::fromStdString(plan.message)) +
                          (reach.isEmpty() ? QString() : QStringLiteral("\n") + reach));
}

void CacheSettingsPanel::refreshStyle() { updatePrediction(); }

}  // namespace lr::ui
