// The operating-point editor drives the stage graph: choosing a different dtype
// control / path redraws the scene (k_prep appears and disappears), invalid
// fields are marked with their reason, and path/mode combos offer valid values only.

#include <QComboBox>
#include <QGraphicsScene>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/main_window.h"
#include "ui/views/op_editor.h"
#include "ui/views/stage_graph_scene.h"
#include "ui/views/stage_graph_view.h"
#include "ui/views/timeline_scene.h"
#include "ui/views/timeline_view.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {
void chooseData(QComboBox* combo, int value) {
  int i = combo->findData(value);
  QVERIFY2(i >= 0, qPrintable(QStringLiteral("value %1 not offered by %2").arg(value).arg(combo->objectName())));
  combo->setCurrentIndex(i);
}
QStringList comboTexts(QComboBox* combo) {
  QStringList out;
  for (int i = 0; i < combo->count(); ++i) out << combo->itemText(i);
  return out;
}
}  // namespace

class TestOpEditorGraph : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void pathAndModeCombosFollowDtype() {
    OpEditor editor;
    auto* kv = editor.findChild<QComboBox*>(QStringLiteral("field_kv"));
    auto* path = editor.findChild<QComboBox*>(QStringLiteral("field_k_path"));
    auto* mode = editor.findChild<QComboBox*>(QStringLiteral("field_mode"));
    QVERIFY(kv && path && mode);
    for (KvDtype d : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
      chooseData(kv, int(d));
      QStringList expected;
      for (KPath p : valid_k_paths(d)) expected << QString::fromStdString(std::string(to_string(p)));
      QCOMPARE(comboTexts(path), expected);
      QStringList modes;
      for (TransformMode m : valid_modes(d, editor.op().k_path))
        modes << QString::fromStdString(std::string(to_string(m)));
      QCOMPARE(comboTexts(mode), modes);
      QVERIFY(editor.isValid());
    }
  }

  void mmaComboSetsTheMatrixInstruction() {
    OpEditor editor;
    auto* mma = editor.findChild<QComboBox*>(QStringLiteral("field_mma"));
    QVERIFY(mma);
    QCOMPARE(comboTexts(mma), (QStringList{QStringLiteral("mma_sync"), QStringLiteral("wgmma")}));
    QCOMPARE(editor.op().mma, Mma::mma_sync);
    QSignalSpy changed(&editor, &OpEditor::opChanged);
    chooseData(mma, int(Mma::wgmma));
    QVERIFY(changed.count() >= 1);
    QCOMPARE(editor.op().mma, Mma::wgmma);
    QVERIFY(editor.isValid());
    // Another field's edit keeps it; setOp shows a stored case's family.
    auto* kv = editor.findChild<QComboBox*>(QStringLiteral("field_kv"));
    chooseData(kv, int(KvDtype::k16v8));
    QCOMPARE(editor.op().mma, Mma::wgmma);
    OperatingPoint stored;
    editor.setOp(stored);
    QCOMPARE(mma->currentText(), QStringLiteral("mma_sync"));
    QCOMPARE(editor.op().mma, Mma::mma_sync);
  }

  void invalidFieldIsMarked() {
    OpEditor editor;
    auto* head_dim = editor.findChild<QSpinBox*>(QStringLiteral("field_head_dim"));
    auto* kv_heads = editor.findChild<QSpinBox*>(QStringLiteral("field_kv_heads"));
    QVERIFY(head_dim && kv_heads);
    QSignalSpy changed(&editor, &OpEditor::opChanged);
    head_dim->setValue(96);
    QVERIFY(changed.count() >= 1);
    QVERIFY(!editor.isValid());
    QVERIFY(editor.fieldProblem(QStringLiteral("head_dim")).contains(QStringLiteral("head_dim")));
    QVERIFY(head_dim->toolTip().contains(QStringLiteral("96")));
    QVERIFY(head_dim->property("invalid").toBool());
    QVERIFY(head_dim->palette().color(QPalette::Base) != editor.palette().color(QPalette::Base));
    QVERIFY(editor.fieldProblem(QStringLiteral("batch")).isEmpty());
    kv_heads->setValue(5);  // 32 q heads are not divisible by 5
    QVERIFY(!editor.fieldProblem(QStringLiteral("kv_heads")).isEmpty());
    head_dim->setValue(128);
    kv_heads->setValue(8);
    QVERIFY(editor.isValid());
    QVERIFY(!head_dim->property("invalid").toBool());
    QCOMPARE(head_dim->palette().color(QPalette::Base), editor.palette().color(QPalette::Base));
    QVERIFY(head_dim->toolTip().isEmpty());
  }

  void graphFollowsEditor() {
    QVERIFY(dir_.isValid());
    const QString db = dir_.filePath(QStringLiteral("fixture.sqlite"));
    test::writeFixtureDatabase(db.toStdString());
    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = false;
    MainWindow window(options);
    QVERIFY(window.openDatabase(db));
    OpEditor* editor = window.editor();
    auto* kv = editor->findChild<QComboBox*>(QStringLiteral("field_kv"));
    auto* path = editor->findChild<QComboBox*>(QStringLiteral("field_k_path"));
    auto* batch = editor->findChild<QSpinBox*>(QStringLiteral("field_batch"));
    QGraphicsScene* scene = window.graphView()->scene();

    batch->setValue(8);
    chooseData(kv, int(KvDtype::k8v8));
    chooseData(path, int(KPath::transform));
    QStringList k8 = stageNodeNames(*scene);
    QVERIFY2(k8.contains(QStringLiteral("k_prep")), qPrintable(k8.join(QLatin1Char(','))));
    QVERIFY(k8.contains(QStringLiteral("v_prep")));
    QVERIFY(!limitingNodeNames(*scene).isEmpty());
    // The fixture measured this shape: the node labels come from that case.
    QVERIFY(window.analysis() && window.analysis()->source_case.has_value());
    QVERIFY(window.analysis()->ii_from_measured);

    chooseData(kv, int(KvDtype::k16v8));
    QStringList k16 = stageNodeNames(*scene);
    QVERIFY2(!k16.contains(QStringLiteral("k_prep")), qPrintable(k16.join(QLatin1Char(','))));
    QVERIFY(k16.contains(QStringLiteral("v_prep")));
    QVERIFY(k8 != k16);

    chooseData(kv, int(KvDtype::k16v16));
    QStringList plain = stageNodeNames(*scene);
    QVERIFY(!plain.contains(QStringLiteral("k_prep")));
    QVERIFY(!plain.contains(QStringLiteral("v_prep")));

    // fp8_qk quantizes Q once per step.
    chooseData(kv, int(KvDtype::k8v8));
    chooseData(path, int(KPath::fp8_qk));
    QVERIFY(stageNodeNames(*scene).contains(QStringLiteral("q_quant")));

    // The timeline draws the same variant: 8 tiles of every per-tile stage at least.
    const int per_tile = static_cast<int>(window.analysis()->graph.stages_on(Agent::memory).size());
    QVERIFY(per_tile > 0);
    QVERIFY(timelineBlockCount(*window.timelineView()->scene()) >= 8 * per_tile);
  }

  void graphMarkedStaleWhileAFieldIsInvalid() {
    QVERIFY(dir_.isValid());
    const QString db = dir_.filePath(QStringLiteral("fixture-stale.sqlite"));
    test::writeFixtureDatabase(db.toStdString());
    MainWindow::Options options;
    options.restoreSettings = false;
    options.interactiveErrors = false;
    MainWindow window(options);
    QVERIFY(window.openDatabase(db));
    auto* kv_heads = window.editor()->findChild<QSpinBox*>(QStringLiteral("field_kv_heads"));
    QVERIFY(kv_heads);
    kv_heads->setValue(8);
    QVERIFY(window.editor()->isValid());
    QVERIFY(!window.graphView()->isStale());
    kv_heads->setValue(5);  // 32 q heads are not divisible by 5
    QVERIFY(!window.editor()->isValid());
    QVERIFY(window.graphView()->isStale());
    QVERIFY2(window.graphView()->staleText().contains(QStringLiteral("kv_heads")),
             qPrintable(window.graphView()->staleText()));
    kv_heads->setValue(8);  // valid again: redrawn, no longer stale
    QVERIFY(!window.graphView()->isStale());
    QVERIFY(window.graphView()->staleText().isEmpty());
  }
};

QTEST_MAIN(TestOpEditorGraph)
#include "test_op_editor_graph.moc"
