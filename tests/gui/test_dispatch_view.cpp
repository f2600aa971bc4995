// The dispatch view over a database with known winners (dispatch_fixture.h): the map
// shows each point's winner in its cell with one colour per variant, draws the three
// crossovers where core put them, names the runner-up and the cases on hover; the cache
// combo switches the group, a gate that fails a variant removes it from the cells, the
// speed-up chart has one series per batch with t(K16/V16) / t(winner); the GUI's winners
// are the CLI's; and `tilepath-gui --view dispatch --screenshot` writes the PNG.

#include <cmath>

#include <QAbstractItemModelTester>
#include <QChart>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineSeries>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "dispatch_fixture.h"
#include "ui/models/dispatch_model.h"
#include "ui/qt_text.h"
#include "ui/views/dispatch_map_widget.h"
#include "ui/views/dispatch_view.h"
#include "ui/views/variant_palette.h"
#include "ui/widget_export.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {

const QString kA = qs(test::kDispatchA);
const QString kB = qs(test::kDispatchB);
const QString kK16 = qs(test::kDispatchK16);

QLineSeries* seriesNamed(QChart* chart, const QString& name) {
  for (QAbstractSeries* s : chart->series())
    if (s->name() == name) return qobject_cast<QLineSeries*>(s);
  return nullptr;
}

}  // namespace

class TestDispatchView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;
  test::DispatchFixtureIds ids_;
  std::vector<CaseSummary> cases_;

  std::int64_t id(CacheState cache, int batch, int context, const std::string& variant) const {
    return ids_.at({cache, batch, context, variant});
  }

  // A view over the fixture at a size where every cell is large enough for its text.
  static void show(DispatchView& view) {
    view.resize(1200, 800);
    view.show();
    QCoreApplication::processEvents();
  }

  QJsonObject cliDispatch(const QString& distribution) {
    QStringList args{QStringLiteral("dispatch"), QStringLiteral("--db"), db_, QStringLiteral("--json")};
    if (!distribution.isEmpty()) args << QStringLiteral("--distribution") << distribution;
    QProcess cli;
    cli.start(QStringLiteral(TILEPATH_CLI_PATH), args);
    if (!cli.waitForFinished(60000)) return {};
    if (cli.exitCode() != 0) qWarning() << cli.readAllStandardError();
    return QJsonDocument::fromJson(cli.readAllStandardOutput()).object();
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(QStringLiteral("dispatch.sqlite"));
    ids_ = test::writeDispatchFixture(db_.toStdString());
    cases_ = RunStore::open_read_only(db_.toStdString()).cases();
    QCOMPARE(cases_.size(), ids_.size());
  }

  void modelUnderTester() {
    DispatchModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCases(cases_);
    QCOMPARE(model.rowCount(), 6);  // the cold group's points, chosen first
    model.setGroupIndex(model.groupLabels().indexOf(QStringLiteral("l2_warm")));
    QCOMPARE(model.rowCount(), 6);
    model.setGateDistribution(QStringLiteral("qwen_bias"));
    QCOMPARE(model.rowCount(), 6);
    model.setCases({});
    QCOMPARE(model.rowCount(), 0);
  }

  void mapShowsTheWinnersInTheirCells() {
    DispatchView view;
    view.setCases(cases_);
    show(view);
    DispatchMapWidget* map = view.map();
    QVERIFY(map->group());
    QCOMPARE(map->group()->shape.cache, CacheState::hbm_cold);  // HBM-cold first, as the rest of the GUI
    QCOMPARE(view.groupCombo()->currentText(), QStringLiteral("hbm_cold"));

    const struct {
      int batch, context;
      QString winner, margin;
    } expected[] = {{1, 1024, kA, QStringLiteral("20.00%")},  {1, 4096, kA, QStringLiteral("10.00%")},
                    {1, 16384, kB, QStringLiteral("25.00%")}, {16, 1024, kB, QStringLiteral("20.00%")},
                    {16, 4096, kB, QStringLiteral("20.00%")}, {16, 16384, kB, QStringLiteral("25.00%")}};
    for (const auto& e : expected) {
      QCOMPARE(map->winnerAt(e.batch, e.context), e.winner);
      QCOMPARE(map->fillAt(e.batch, e.context), variantColour(e.winner));
      QCOMPARE(map->marginTextAt(e.batch, e.context), e.margin);
    }
    QVERIFY(variantColour(kA) != variantColour(kB));
    QCOMPARE(map->legendVariants(), (QStringList{kB, kA}));  // most cells won first

    // Rows are batches top to bottom, columns contexts left to right, wider cells for wider log steps.
    const QRectF first = map->cellRect(1, 1024), right = map->cellRect(1, 4096), below = map->cellRect(16, 1024);
    QVERIFY(right.left() >= first.right() - 0.5);
    QVERIFY(below.top() >= first.bottom() - 0.5);
    QVERIFY(map->cellRect(1, 2048).isEmpty());  // not a measured context

    // What is painted there is the winner's colour (a corner of the cell, away from its text and the lines).
    const QImage image = renderWidget(*map);
    for (const auto& e : expected) {
      const QPointF corner = map->cellRect(e.batch, e.context).bottomLeft() + QPointF(6, -6);
      QCOMPARE(QColor(image.pixel(corner.toPoint())), variantColour(e.winner));
    }
  }

  void crossoversAreDrawnWhereCorePutThem() {
    DispatchView view;
    view.setCases(cases_);
    show(view);
    DispatchMapWidget* map = view.map();
    QCOMPARE(map->crossoverLineCount(), 3);
    int along_context = 0, along_batch = 0;
    for (const DispatchMapWidget::CrossoverLine& l : map->crossoverLines()) {
      const analysis::Crossover& x = l.crossover;
      QCOMPARE(qs(x.from), kA);
      QCOMPARE(qs(x.to), kB);
      if (x.axis == "context") {
        ++along_context;
        // A vertical segment inside the B=1 row, between the centres of the S=4096 and S=16384 cells.
        QCOMPARE(x.held, 1);
        QCOMPARE(l.line.x1(), l.line.x2());
        const QRectF row_lo = map->cellRect(1, 4096), row_hi = map->cellRect(1, 16384);
        QVERIFY(l.line.x1() > row_lo.center().x() && l.line.x1() < row_hi.center().x());
        QVERIFY(l.line.y1() >= row_lo.top() && l.line.y2() <= row_lo.bottom());
      } else {
        ++along_batch;
        // Horizontal, inside its context's column, between the B=1 and B=16 cell centres.
        QCOMPARE(l.line.y1(), l.line.y2());
        const QRectF top = map->cellRect(1, x.held), bottom = map->cellRect(16, x.held);
        QVERIFY(l.line.y1() > top.center().y() && l.line.y1() < bottom.center().y());
        QVERIFY(l.line.x1() >= top.left() && l.line.x2() <= top.right());
      }
    }
    QCOMPARE(along_context, 1);
    QCOMPARE(along_batch, 2);

    // Hovering a line describes that crossover.
    const DispatchMapWidget::CrossoverLine line = map->crossoverLines().front();
    const QString text = map->toolTipAt(line.line.center());
    QVERIFY2(text.startsWith(QStringLiteral("crossover along")), qPrintable(text));
    QVERIFY(text.contains(kA + QStringLiteral(" → ") + kB));
  }

  void tooltipNamesRunnerUpAndCases() {
    DispatchView view;
    view.setCases(cases_);
    show(view);
    DispatchMapWidget* map = view.map();
    const QString text = map->cellToolTip(1, 1024);
    const CacheState cold = CacheState::hbm_cold;
    QVERIFY2(
        text.contains(QStringLiteral("winner: %1, 10 µs (case %2)").arg(kA).arg(id(cold, 1, 1024, test::kDispatchA))),
        qPrintable(text));
    QVERIFY2(text.contains(
                 QStringLiteral("runner-up: %1, 12 µs (case %2)").arg(kB).arg(id(cold, 1, 1024, test::kDispatchB))),
             qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("margin: 20.00%")));
    for (const std::string& v : {test::kDispatchA, test::kDispatchB, test::kDispatchK16})
      QVERIFY(text.contains(QStringLiteral("case %1: %2").arg(id(cold, 1, 1024, v)).arg(qs(v))));
    QVERIFY(!text.contains(QStringLiteral("excluded")));
    // The hover at the cell's centre gives the same text.
    QCOMPARE(map->toolTipAt(map->cellRect(1, 1024).center()), text);
  }

  void cacheComboSwitchesTheGroup() {
    DispatchView view;
    view.setCases(cases_);
    show(view);
    QComboBox* cache = view.groupCombo();
    QCOMPARE(cache->count(), 2);
    const int warm = cache->findText(QStringLiteral("l2_warm"));
    QVERIFY(warm >= 0);
    cache->setCurrentIndex(warm);
    QCOMPARE(view.map()->group()->shape.cache, CacheState::l2_warm);
    QCOMPARE(view.model()->group()->shape.cache, CacheState::l2_warm);
    for (int batch : {1, 16})
      for (int context : {1024, 4096, 16384}) QCOMPARE(view.map()->winnerAt(batch, context), kA);
    QCOMPARE(view.map()->crossoverLineCount(), 0);
    QCOMPARE(view.map()->legendVariants(), QStringList{kA});
  }

  void gateRemovesTheFailingVariant() {
    DispatchView view;
    view.setCases(cases_);
    show(view);
    QComboBox* gate = view.gateCombo();
    // "random" is the speed runs' kernel check, never a gate.
    QCOMPARE(gate->count(), 3);
    QCOMPARE(gate->itemText(0), QStringLiteral("no gate"));
    QCOMPARE(gate->itemText(1), QStringLiteral("gaussian"));
    QCOMPARE(gate->itemText(2), QStringLiteral("qwen_bias"));
    QVERIFY(view.caption().startsWith(QStringLiteral("no gate applied")));

    gate->setCurrentIndex(1);  // every variant passes on gaussian: the same winners
    QCOMPARE(view.map()->winnerAt(16, 1024), kB);
    QCOMPARE(view.map()->crossoverLineCount(), 3);

    gate->setCurrentIndex(2);  // B fails on qwen_bias: gone from every cell
    QCOMPARE(view.model()->gateDistribution(), QStringLiteral("qwen_bias"));
    QCOMPARE(view.map()->group()->shape.cache, CacheState::hbm_cold);  // the group stays chosen
    QVERIFY(view.caption().contains(QStringLiteral("qwen_bias")));
    for (const auto& [key, cell] : view.map()->group()->cells) {
      QCOMPARE(qs(cell.winner()->variant), kA);
      for (const analysis::DispatchCandidate& d : cell.admitted) QVERIFY(qs(d.variant) != kB);
      QCOMPARE(cell.excluded.size(), std::size_t(1));
    }
    QCOMPARE(view.map()->crossoverLineCount(), 0);
    QCOMPARE(view.map()->legendVariants(), QStringList{kA});
    const QString text = view.map()->cellToolTip(16, 1024);
    QVERIFY2(text.contains(QStringLiteral("runner-up: %1, 50 µs").arg(kK16)), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("excluded:")));
    QVERIFY(text.contains(QStringLiteral("case %1: %2, fails the gate on qwen_bias")
                              .arg(id(CacheState::hbm_cold, 16, 1024, test::kDispatchB))
                              .arg(kB)));
    // Without the gate B is back.
    gate->setCurrentIndex(0);
    QCOMPARE(view.map()->winnerAt(16, 1024), kB);
  }

  void speedupChartHasOneSeriesPerBatch() {
    DispatchView view;
    view.setCases(cases_);
    show(view);
    QChart* chart = view.speedupChart();
    QCOMPARE(chart->series().size(), 2);
    QLineSeries* b1 = seriesNamed(chart, QStringLiteral("B=1"));
    QLineSeries* b16 = seriesNamed(chart, QStringLiteral("B=16"));
    QVERIFY(b1 && b16);
    // t(K16/V16) / t(winner); B=16, S=4096 has no K16/V16 case and so no point.
    QCOMPARE(b1->points(), (QList<QPointF>{{1024, 2.0}, {4096, 2.0}, {16384, 2.5}}));
    QCOMPARE(b16->points(), (QList<QPointF>{{1024, 2.0}, {16384, 3.0}}));
    view.groupCombo()->setCurrentIndex(view.groupCombo()->findText(QStringLiteral("l2_warm")));
    QCOMPARE(seriesNamed(view.speedupChart(), QStringLiteral("B=16"))->points().size(), 3);
  }

  void severalBackendsAreChosenByFullLabel() {
    // The same cases under a second backend: the combo names backend, device, shape and cache.
    std::vector<CaseSummary> cases = cases_;
    for (const CaseSummary& c : cases_) {
      CaseSummary other = c;
      other.backend = "other";
      cases.push_back(other);
    }
    DispatchView view;
    view.setCases(cases);
    QCOMPARE(view.groupCombo()->count(), 4);
    QVERIFY(view.groupCombo()->findText(QStringLiteral("other, Fixture GPU, Hq/Hk 32/8, D 128, page 16, l2_warm")) >=
            0);
    QVERIFY(view.groupCombo()->findText(QStringLiteral("fixture, Fixture GPU, Hq/Hk 32/8, D 128, page 16, hbm_cold")) >=
            0);
  }

  void guiWinnersAreTheClis_data() {
    QTest::addColumn<QString>("distribution");
    QTest::newRow("no gate") << QString();
    QTest::newRow("qwen_bias") << QStringLiteral("qwen_bias");
  }
  void guiWinnersAreTheClis() {
    QFETCH(QString, distribution);
    const QJsonObject cli = cliDispatch(distribution);
    QVERIFY(!cli.isEmpty());
    DispatchModel model;
    model.setCases(cases_);
    model.setGateDistribution(distribution);
    QCOMPARE(cli.value(QStringLiteral("gate")).toString(), qs(model.table().gate));
    const QJsonArray groups = cli.value(QStringLiteral("groups")).toArray();
    QCOMPARE(groups.size(), static_cast<qsizetype>(model.table().groups.size()));
    int points = 0;
    for (const QJsonValue& gv : groups) {
      const QJsonObject g = gv.toObject();
      const analysis::DispatchGroup& group = model.table().groups.at(g.value(QStringLiteral("group")).toInt());
      for (const QJsonValue& pv : g.value(QStringLiteral("points")).toArray()) {
        const QJsonObject p = pv.toObject();
        const analysis::DispatchCell* cell =
            group.cell(p.value(QStringLiteral("batch")).toInt(), p.value(QStringLiteral("context")).toInt());
        QVERIFY(cell && cell->winner());
        QCOMPARE(p.value(QStringLiteral("winner")).toString(), qs(cell->winner()->variant));
        ++points;
      }
    }
    QCOMPARE(points, 12);
    std::size_t crossovers = 0;
    for (const analysis::DispatchGroup& g : model.table().groups) crossovers += g.crossovers.size();
    QCOMPARE(static_cast<std::size_t>(cli.value(QStringLiteral("crossovers")).toArray().size()), crossovers);
  }

  void screenshotOptionWritesThePng() {
    // A copy of the bundled sweep: the GUI opens what it is given for writing.
    const QString db = dir_.filePath(QStringLiteral("h200-copy.sqlite"));
    QVERIFY(QFile::copy(QStringLiteral(TILEPATH_SOURCE_DIR "/data/h200-sweep.sqlite"), db));
    const QString png = dir_.filePath(QStringLiteral("dispatch.png"));
    QProcess gui;
    gui.start(QStringLiteral(TILEPATH_GUI_PATH), {QStringLiteral("--open"), db, QStringLiteral("--view"),
                                                  QStringLiteral("dispatch"), QStringLiteral("--screenshot"), png});
    QVERIFY(gui.waitForFinished(120000));
    QVERIFY2(gui.exitCode() == 0, gui.readAllStandardError().constData());
    QVERIFY(QFileInfo(png).size() > 0);
    const QImage image(png);
    QCOMPARE(image.size(), QSize(1440, 900));
    QVERIFY(distinctColours(image) >= 8);
  }
};

QTEST_MAIN(TestDispatchView)
#include "test_dispatch_view.moc"
