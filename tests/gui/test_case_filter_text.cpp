// "key=value" filter text for Export subset… becomes the CaseFilter the store
// applies; bad keys and values are rejected naming the key and allowed values.

#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/case_filter_text.h"

using namespace tilepath;
using namespace tilepath::ui;

class TestCaseFilterText : public QObject {
  Q_OBJECT
 private slots:
  void parsesEveryKey() {
    CaseFilter f =
        parseCaseFilter(QStringLiteral("run=3 backend=sim kv=k8v8 path=transform mode=k_only cache=l2_warm mma=wgmma "
                                       "batch=64 context=4096 head_dim=128 status=ok"));
    QCOMPARE(*f.run_id, std::int64_t(3));
    QCOMPARE(*f.backend, std::string("sim"));
    QCOMPARE(*f.kv, std::string("k8v8"));
    QCOMPARE(*f.k_path, std::string("transform"));
    QCOMPARE(*f.mode, std::string("k_only"));
    QCOMPARE(*f.cache, std::string("l2_warm"));
    QCOMPARE(*f.mma, std::string("wgmma"));
    QCOMPARE(*f.batch, 64);
    QCOMPARE(*f.context, 4096);
    QCOMPARE(*f.head_dim, 128);
    QVERIFY(*f.status == CaseStatus::ok);
    QVERIFY(!f.device.has_value());
    CaseFilter empty = parseCaseFilter(QString());
    QVERIFY(!empty.kv && !empty.run_id && !empty.batch && !empty.mma);
  }

  void rejectsBadInput() {
    try {
      parseCaseFilter(QStringLiteral("colour=red"));
      QFAIL("unknown key accepted");
    } catch (const ValidationError& e) {
      QCOMPARE(QString::fromStdString(e.field()), QStringLiteral("colour"));
      QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("backend")));
    }
    QVERIFY_THROWS_EXCEPTION(ValidationError, parseCaseFilter(QStringLiteral("kv=k9v9")));
    QVERIFY_THROWS_EXCEPTION(ValidationError, parseCaseFilter(QStringLiteral("batch=many")));
    QVERIFY_THROWS_EXCEPTION(ValidationError, parseCaseFilter(QStringLiteral("kv")));
  }

  void filterSelectsTheStoredSubset() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string db = dir.filePath(QStringLiteral("fixture.sqlite")).toStdString();
    test::writeFixtureDatabase(db);
    RunStore store = RunStore::open(db);
    const auto k8_cold = store.cases(parseCaseFilter(QStringLiteral("kv=k8v8 cache=hbm_cold")));
    QCOMPARE(k8_cold.size(), size_t(3));  // three contexts
    for (const CaseSummary& c : k8_cold) {
      QVERIFY(c.record.op.kv == KvDtype::k8v8);
      QVERIFY(c.record.op.cache == CacheState::hbm_cold);
    }
  }
};

QTEST_MAIN(TestCaseFilterText)
#include "test_case_filter_text.moc"
