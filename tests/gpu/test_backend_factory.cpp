// The backend choice (--backend auto|cpu|cuda, --gpu-layers): names, the device probe that
// never crashes without a driver, the fallback to the CPU with a one-line note, and the
// arithmetic of the gpu-layers plan. Runs on every machine (label unit).
#include <QtTest>

#include "engine/backend/backend_factory.h"
#if defined(LONGREAD_HAVE_CUDA)
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_handles.h"
#endif

using namespace lr;

namespace {

LayerWeightBytes eight_layers() {
    LayerWeightBytes w;
    w.global_bytes = uint64_t(500) << 20;
    w.layer_bytes.assign(8, uint64_t(200) << 20);
    return w;
}

constexpr uint64_t kMiB = uint64_t(1) << 20;

}  // namespace

class TestBackendFactory : public QObject {
    Q_OBJECT
private slots:
    void names() {
        QCOMPARE(backend_choice_from_name("auto"), std::optional(BackendChoice::automatic));
        QCOMPARE(backend_choice_from_name("cpu"), std::optional(BackendChoice::cpu));
        QCOMPARE(backend_choice_from_name("cuda"), std::optional(BackendChoice::cuda));
        QVERIFY(!backend_choice_from_name("gpu"));
        QVERIFY(!backend_choice_from_name("CUDA"));
        for (BackendChoice c : {BackendChoice::automatic, BackendChoice::cpu, BackendChoice::cuda}) {
            QCOMPARE(backend_choice_from_name(backend_choice_name(c)), std::optional(c));
        }
    }

    void inventoryNeverFails() {
        const BackendInventory inv = probe_backends();
        QVERIFY(!inv.compiled.empty());
        QCOMPARE(inv.compiled.front(), std::string("cpu"));
#if defined(LONGREAD_HAVE_CUDA)
        QCOMPARE(inv.compiled.size(), size_t(2));
#else
        QCOMPARE(inv.compiled.size(), size_t(1));
#endif
        // No device: a reason; devices: each with a name and memory.
        if (inv.devices.empty()) QVERIFY(!inv.cuda_problem.empty());
        for (const GpuDevice & d : inv.devices) QVERIFY(!d.name.empty() && d.total_bytes > 0);
    }

    void cpuIsAlwaysThere() {
        const BackendSelection s = create_backend({.choice = BackendChoice::cpu, .n_threads = 1});
        QVERIFY(s.backend);
        QCOMPARE(s.backend->kind(), BackendKind::cpu);
        QVERIFY(s.note.empty());
        QVERIFY(!s.plan);
    }

    // Without a usable GPU: `cuda` says why in one line and runs on the CPU; `auto` is
    // silent on a machine without any GPU.
    void cudaFallsBackWithANote() {
        const BackendInventory inv = probe_backends();
        const BackendSelection asked = create_backend({.choice = BackendChoice::cuda, .n_threads = 1});
        QVERIFY(asked.backend);
        const BackendSelection automatic = create_backend({.choice = BackendChoice::automatic, .n_threads = 1});
        QVERIFY(automatic.backend);
        if (asked.backend->kind() == BackendKind::cuda) {
            QCOMPARE(automatic.backend->kind(), BackendKind::cuda);
            return;  // a usable GPU: nothing to fall back from
        }
        QVERIFY(!asked.note.empty());
        QVERIFY2(asked.note.find('\n') == std::string::npos, asked.note.c_str());
        QVERIFY2(asked.note.find("CPU") != std::string::npos, asked.note.c_str());
        QCOMPARE(automatic.backend->kind(), BackendKind::cpu);
        if (inv.devices.empty()) QVERIFY2(automatic.note.empty(), automatic.note.c_str());
        // A device index that does not exist.
        const BackendSelection missing = create_backend({.choice = BackendChoice::cuda, .n_threads = 1, .device = 57});
        QCOMPARE(missing.backend->kind(), BackendKind::cpu);
        QVERIFY(!missing.note.empty());
    }

#if defined(LONGREAD_HAVE_CUDA)
    // cuBLAS is opened at run time: where the toolkit is installed (the build machines) it
    // loads; a handle without a device is an error, not a crash; and creating the backend
    // without a device says why in one line.
    void cudaPiecesFailCleanly() {
        Result<const cuda::CublasApi *> api = cuda::cublas_api();
        if (!api.ok()) QVERIFY(api.status().message().find("cuBLAS") != std::string::npos);
        const CudaProbe probe = probe_cuda_devices();
        Result<std::unique_ptr<CudaBackend>> b = CudaBackend::create();
        if (probe.devices.empty()) {
            QVERIFY(!b.ok());
            QVERIFY(b.status().message().find('\n') == std::string::npos);
            if (api.ok()) QVERIFY(!cuda::CublasHandle::create().ok());
        }
    }
#endif

    // The VRAM plan counts what the CUDA backend stores: a type its kernels read as it is, the
    // others (IQ, TQ2_0, MXFP4) as F32; the file's bytes in builds without CUDA.
    void vramCountsWhatCudaStores() {
        QCOMPARE(cuda_weight_bytes(DType::Q4_K, 256, 144), uint64_t(144));
        QCOMPARE(cuda_weight_bytes(DType::Q8_0, 256, 272), uint64_t(272));
#if defined(LONGREAD_HAVE_CUDA)
        for (DType t : {DType::IQ4_XS, DType::IQ2_XXS, DType::IQ1_S, DType::TQ2_0, DType::MXFP4}) {
            QCOMPARE(cuda_weight_bytes(t, 256, 100), uint64_t(1024));
        }
#else
        QCOMPARE(cuda_weight_bytes(DType::IQ4_XS, 256, 136), uint64_t(136));
#endif
    }

    void gpuLayersPlan_data() {
        QTest::addColumn<qulonglong>("free_mib");
        QTest::addColumn<int>("requested");
        QTest::addColumn<bool>("usable");
        QTest::addColumn<int>("layers");
        QTest::addColumn<bool>("noted");
        // 500 MiB global + 8 x 200 MiB; usable = free - 768 MiB; automatic keeps a fifth free.
        QTest::newRow("auto-everything-fits") << qulonglong(8192) << -1 << true << 8 << false;
        QTest::newRow("auto-some") << qulonglong(2048) << -1 << true << 2 << false;   // 1280 usable, 1024 for weights
        QTest::newRow("auto-none") << qulonglong(1400) << -1 << true << 0 << false;   // 632 usable, 505 for weights
        QTest::newRow("too-little") << qulonglong(1200) << -1 << false << 0 << true;  // 432 usable < 500 global
        QTest::newRow("asked-3") << qulonglong(8192) << 3 << true << 3 << false;
        QTest::newRow("asked-0") << qulonglong(8192) << 0 << true << 0 << false;
        QTest::newRow("asked-too-many") << qulonglong(2048) << 8 << true << 3 << true;  // 1280 usable: global + 3
        QTest::newRow("asked-more-than-exist") << qulonglong(8192) << 100 << true << 8 << false;
    }
    void gpuLayersPlan() {
        QFETCH(qulonglong, free_mib);
        QFETCH(int, requested);
        QFETCH(bool, usable);
        QFETCH(int, layers);
        QFETCH(bool, noted);
        const LayerWeightBytes w = eight_layers();
        const GpuOffloadPlan plan = plan_gpu_offload(w, free_mib * kMiB, requested);
        QCOMPARE(plan.usable, usable);
        QCOMPARE(plan.note.empty(), !noted);
        if (!usable) return;
        QCOMPARE(plan.n_layer, 8u);
        QCOMPARE(int(plan.n_gpu_layers), layers);
        QCOMPARE(plan.weight_vram_bytes, w.global_bytes + uint64_t(layers) * (200 * kMiB));
        // Every layer: no budget at all (nothing can be streamed by a rounding); else exact.
        QCOMPARE(plan.weight_budget_bytes, layers == 8 ? UINT64_MAX : plan.weight_vram_bytes);
    }
};

QTEST_GUILESS_MAIN(TestBackendFactory)
#include "test_backend_factory.moc"
