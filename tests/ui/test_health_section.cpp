// The cache panel's "Health" area: the findings of the latest check with their severity and
// what was repaired, the counts of checks and repairs, and nothing without a session.
#include <QtTest>

#include "ui/cache_panel.h"
#include "ui/health_section.h"

using namespace lr;
using namespace lr::app;
using namespace lr::ui;

class TestHealthSection : public QObject {
    Q_OBJECT
private slots:
    void panelShowsFindingsAndRepairs() {
        CachePanel panel;
        HealthSection * health = panel.healthSection();
        QVERIFY(health);
        QVERIFY2(health->summary().contains("Not checked yet"), qPrintable(health->summary()));

        CacheSnapshot s{.hasSession = true};
        s.kv.health = {{.check = KvHealthCheck::disk_space,
                        .severity = KvHealthSeverity::critical,
                        .message = "only 200.0 MiB is free on the disk of /tmp/kv",
                        .repair = "dropped the oldest prefix-cache entries (12.0 MiB)"},
                       {.check = KvHealthCheck::prefix_cache,
                        .severity = KvHealthSeverity::info,
                        .message = "the prefix cache holds 12 blocks"}};
        s.kv.health_checks = 3;
        s.kv.health_repairs = 1;
        panel.setSnapshot(s);
        QVERIFY2(health->summary().contains("3 checks, 1 repair. ") && health->summary().contains("found"), qPrintable(health->summary()));
        const QStringList rows = health->rows();
        QCOMPARE(rows.size(), 2);
        QVERIFY2(rows[0].startsWith("Critical \u2014 Disk space: only 200.0 MiB is free"), qPrintable(rows[0]));
        QVERIFY2(rows[0].contains("Repaired: dropped the oldest prefix-cache entries (12.0 MiB)"), qPrintable(rows[0]));
        QVERIFY2(rows[1].startsWith("Info \u2014 Prefix cache:") && !rows[1].contains("Repaired"), qPrintable(rows[1]));

        // Only info: nothing wrong.
        s.kv.health.erase(s.kv.health.begin());
        s.kv.health_checks = 1;
        s.kv.health_repairs = 0;
        panel.setSnapshot(s);
        QCOMPARE(health->rows().size(), 1);
        QCOMPARE(health->summary(), QStringLiteral("1 check, 0 repairs. Nothing wrong at the latest check."));

        panel.setSnapshot({});  // no session: nothing checked
        QVERIFY(health->rows().isEmpty());
        QVERIFY(health->summary().contains("Not checked yet"));
    }
};

QTEST_MAIN(TestHealthSection)
#include "test_health_section.moc"
