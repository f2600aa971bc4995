// "key=value" filter text for Export subset… becomes the CaseFilter the store
// applies; bad keys and values are rejected naming the key and allowed values.

#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/case_filter_text.h"
#include "ui/database_session.h"
#include "ui/views/runs_view.h"

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

  void acceptsTheCliSpellings() {
    const CaseFilter f = parseCaseFilter(QStringLiteral("run-id=2 k-path=fp8_qk head-dim=64 k_path=transform"));
    QCOMPARE(*f.run_id, std::int64_t(2));
    QCOMPARE(*f.k_path, std::string("transform"));  // the last term wins
    QCOMPARE(*f.head_dim, 64);
  }

  // The runs view's filter: the CLI's keys on the stored case, an unknown key an error
  // naming the allowed keys, and the count following the filter.
  void theRunsViewFiltersWithTheCliKeys() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString db = dir.filePath(QStringLiteral("fixture.sqlite"));
    test::writeFixtureDatabase(db.toStdString());
    DatabaseSession session;
    QVERIFY(session.open(db));
    RunsView view(&session);
    view.reload();
    const int total = static_cast<int>(session.cases().size());
    QVERIFY(total > 3);
    QCOMPARE(view.visibleCases()->rowCount(), total);

    view.setFilterText(QStringLiteral("kv=k8v8 cache=hbm_cold"));
    QVERIFY(view.filterError().isEmpty());
    const int expected = static_cast<int>(RunStore::open_read_only(db.toStdString())
                                              .cases(parseCaseFilter(QStringLiteral("kv=k8v8 cache=hbm_cold")))
                                              .size());
    QCOMPARE(view.visibleCases()->rowCount(), expected);
    QVERIFY(expected < total);
    QVERIFY2(view.countsText().contains(QStringLiteral("%1 of %2 cases").arg(expected).arg(total)),
             qPrintable(view.countsText()));

    view.setFilterText(QStringLiteral("colour=red"));
    QVERIFY(view.filterError().contains(QStringLiteral("colour")));
    QVERIFY(view.filterError().contains(QStringLiteral("k_path")));
    QCOMPARE(view.visibleCases()->rowCount(), total);
    QVERIFY(view.countsText().contains(QStringLiteral("%1 cases").arg(total)));

    view.setFilterText(QString());
    QVERIFY(view.filterError().isEmpty());
    QCOMPARE(view.visibleCases()->rowCount(), total);
  }
};

QTEST_MAIN(TestCaseFilterText)
#include "test_case_filter_text.moc"
