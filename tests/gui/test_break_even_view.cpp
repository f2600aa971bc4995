// The break-even view follows the operating-point editor: the shape the editor holds is
// the row selected and the waterfall drawn, also after the cases are reloaded.

#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/models/break_even_model.h"
#include "ui/views/break_even_view.h"

using namespace tilepath;
using namespace tilepath::ui;

class TestBreakEvenView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::vector<CaseSummary> cases_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    const std::string db = dir_.filePath(QStringLiteral("fixture.sqlite")).toStdString();
    test::writeFixtureDatabase(db);
    cases_ = RunStore::open_read_only(db).cases();
  }

  void shapeFollowsTheOperatingPoint() {
    BreakEvenView view;
    view.setCases(cases_);
    QCOMPARE(view.model()->rowCount(), 6);  // 3 contexts × 2 cache states at B=8
    // With no point to follow: the largest HBM-cold shape.
    QVERIFY(view.selectedRow().has_value());
    QCOMPARE(view.selectedRow()->op.context, 16384);
    QCOMPARE(view.selectedRow()->op.cache, CacheState::hbm_cold);

    OperatingPoint op = view.model()->rows().front().op;
    op.context = 1024;
    op.cache = CacheState::l2_warm;
    op.kv = KvDtype::k16v16;  // the variant does not matter, the shape does
    view.followOperatingPoint(op);
    QVERIFY(view.selectedRow().has_value());
    QCOMPARE(view.selectedRow()->op.context, 1024);
    QCOMPARE(view.selectedRow()->op.cache, CacheState::l2_warm);

    // A reload keeps the followed shape.
    view.setCases(cases_);
    QCOMPARE(view.selectedRow()->op.context, 1024);
    QCOMPARE(view.selectedRow()->op.cache, CacheState::l2_warm);

    // A shape the table does not hold leaves the selection as it was.
    op.context = 4096;
    op.batch = 3;
    view.followOperatingPoint(op);
    QCOMPARE(view.selectedRow()->op.context, 1024);
  }

  void allRowsVisible() {
    BreakEvenView view;
    view.resize(1200, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setCases(cases_);
    QCoreApplication::processEvents();
    QTableView* table = view.table();
    const int last = table->model()->rowCount() - 1;
    QCOMPARE(last, 5);
    // The last row ends inside the table's viewport, so none is hidden behind a scroll.
    const int bottom = table->rowViewportPosition(last) + table->rowHeight(last);
    QVERIFY2(
        table->rowViewportPosition(0) >= 0 && bottom <= table->viewport()->height(),
        qPrintable(QStringLiteral("last row ends at %1, viewport %2").arg(bottom).arg(table->viewport()->height())));
  }
};

QTEST_MAIN(TestBreakEvenView)
#include "test_break_even_view.moc"
