#include "ui/views/stage_graph_scene.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <QBrush>
#include <QFont>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QPainterPath>
#include <QPen>

#include "ui/qt_text.h"
#include "ui/views/agent_palette.h"

namespace tilepath::ui {

namespace {

constexpr double kNodeW = 150, kNodeH = 74, kColStep = 200, kRowStep = 130;
constexpr int kLimitingKey = 1;

// Column/row of each stage: K chain on row 0, V chain on row 2, the merge on row 1.
QPointF gridPosition(Stage s) {
  auto at = [](double col, double row) { return QPointF(col * kColStep, row * kRowStep); };
  switch (s) {
    case Stage::q_quant:  // below the K chain: its edge to qk must not cross k_load/k_prep
      return at(0, 1);
    case Stage::k_load:
      return at(1, 0);
    case Stage::k_prep:
      return at(2, 0);
    case Stage::qk:
      return at(3, 0);
    case Stage::softmax:
      return at(4, 0);
    case Stage::k_bias:  // between qk and softmax, below them
      return at(4, 1);
    case Stage::v_load:
      return at(1, 2);
    case Stage::v_prep:
      return at(2, 2);
    case Stage::pv:
      return at(5, 1);
    case Stage::accum:
      return at(6, 1);
    case Stage::combine:
      return at(7, 1);
  }
  return {};
}

// The thick border. A cuda case's kernel II model knows how our kernel runs the stages (the
// wgmma kernels' one consumer warpgroup runs qk, softmax and pv in turn, and their ring is
// measured whole), so it marks what limits that kernel; otherwise the design note's agents do.
bool drawnLimiting(const VariantAnalysis& a, Stage s) {
  if (a.kernel_ii) return std::ranges::find(a.kernel_ii->limit_stages, s) != a.kernel_ii->limit_stages.end();
  return !a.schedule.stages.empty() && s == a.ii.limiting_stage;
}

QString limitingNote(const VariantAnalysis& a) {
  if (a.kernel_ii)
    return QStringLiteral("\nlimits the kernel's tile interval (kernel II model: %1%2)")
        .arg(qs(analysis::describe_limit(*a.kernel_ii).what),
             a.kernel_ii->missing.empty() ? QString() : QStringLiteral("; a lower bound, some stages unmeasured"));
  return QStringLiteral("\nlimits the steady-state II");
}

// A measured ablation difference; at or below zero it reads "hidden (≤ 0)" (stageCostText).
QString costText(const char* what, double v) {
  if (!std::isfinite(v)) return QStringLiteral("%1 —").arg(QLatin1String(what));
  if (v <= 0) return QStringLiteral("%1 %2").arg(QLatin1String(what), stageCostText(v, 3)).trimmed();
  return QStringLiteral("%1 %2 µs").arg(QLatin1String(what), stageCostText(v, 3));
}

// A prediction is a duration from the cost model, never an ablation difference: shown as is.
QString predictedText(const char* what, double v) {
  if (!std::isfinite(v)) return QStringLiteral("%1 —").arg(QLatin1String(what));
  return QStringLiteral("%1 %2 µs").arg(QLatin1String(what), QString::number(v, 'g', 3)).trimmed();
}

// Why a measured cost shows as "hidden (≤ 0)": it is an ablation difference, not a duration.
QString belowZeroNote(double measured) {
  const QString note = stageCostNote(measured);
  return note.isEmpty() ? QString() : QStringLiteral("\n") + note;
}

void addArrowHead(QPainterPath& path, QPointF tip, QPointF from) {
  QPointF d = tip - from;
  double len = std::hypot(d.x(), d.y());
  if (len < 1e-6) return;
  d /= len;
  QPointF n(-d.y(), d.x());
  path.moveTo(tip);
  path.lineTo(tip - d * 10 + n * 5);
  path.moveTo(tip);
  path.lineTo(tip - d * 10 - n * 5);
}

}  // namespace

void buildStageGraphScene(QGraphicsScene& scene, const VariantAnalysis& a) {
  scene.clear();
  QFont bold;
  bold.setBold(true);
  bold.setPointSize(11);
  QFont small;
  small.setPointSize(9);

  const bool has_ii = !a.schedule.stages.empty();
  std::map<Stage, QRectF> rects;
  double largest_isolated = 0;
  for (Stage s : a.graph.stages())
    if (a.isolated.has(s)) largest_isolated = std::max(largest_isolated, a.isolated[s]);
  auto* tile_caption = scene.addSimpleText(
      a.tile_tokens > 0 ? QStringLiteral("tile: %1 tokens of one kv head; costs per tile").arg(a.tile_tokens)
                        : QStringLiteral("tile size not reported; costs per tile"),
      small);
  tile_caption->setData(kTileCaptionKey, true);
  tile_caption->setPos(0, -kRowStep / 2);
  for (Stage s : a.graph.stages()) {
    QPointF p = gridPosition(s);
    QRectF r(p, QSizeF(kNodeW, kNodeH));
    rects[s] = r;
    const Agent agent = a.graph.agent_of(s);
    const bool limiting = drawnLimiting(a, s);
    QColor fill = agentColour(agent).lighter(160);
    auto* node = scene.addRect(
        r, QPen(limiting ? QColor(20, 20, 20) : agentColour(agent).darker(130), limiting ? 5 : 1.5), QBrush(fill));
    node->setData(kStageNodeKey, qs(to_string(s)));
    node->setData(kLimitingKey, limiting);
    node->setZValue(2);
    // A stage the case has no cost for is unknown, not free: dashed border, "unknown".
    const bool unknown = a.source_case && !a.measured.known(s);
    if (unknown && !limiting) node->setPen(QPen(agentColour(agent).darker(130), 1.5, Qt::DashLine));
    const QString measured_text =
        unknown
            ? QStringLiteral("unknown: not measured; the II counts it as 0")
            : costText("", a.measured[s]) +
                  (a.measured.known(s) ? QStringLiteral(" (%1)").arg(qs(analysis::to_string(a.measured.source_of(s))))
                                       : QString());
    node->setToolTip(QStringLiteral("%1 on %2\nmeasured: %3%4\npredicted: %5\nslack to II: %6 µs%7")
                         .arg(qs(to_string(s)), agentTitle(agent), measured_text, belowZeroNote(a.measured[s]),
                              predictedText("", a.predicted[s]), formatNumber(a.ii.slack_us[s]),
                              limiting ? limitingNote(a) : QString()));
    auto* title = new QGraphicsSimpleTextItem(qs(to_string(s)) + (limiting ? QStringLiteral("  ◆") : QString()), node);
    title->setFont(bold);
    title->setPos(r.left() + 8, r.top() + 6);
    auto* measured = new QGraphicsSimpleTextItem(
        unknown ? QStringLiteral("meas unknown") : costText(a.measured_from_model ? "sim" : "meas", a.measured[s]),
        node);
    measured->setFont(small);
    measured->setPos(r.left() + 8, r.top() + 30);
    auto* predicted = new QGraphicsSimpleTextItem(predictedText("pred", a.predicted[s]), node);
    predicted->setFont(small);
    predicted->setPos(r.left() + 8, r.top() + 48);
    if (a.isolated.has(s) && a.isolated[s] > 0 && largest_isolated > 0) {
      const double full = (kNodeW - 16) * a.isolated[s] / largest_isolated;
      const double unhidden = a.unhidden.has(s) ? full * std::clamp(a.unhidden[s] / a.isolated[s], 0.0, 1.0) : 0.0;
      auto* bar = new QGraphicsRectItem(QRectF(r.left() + 8, r.bottom() - 9, std::max(2.0, full), 5), node);
      bar->setPen(QPen(agentColour(agent).darker(160), 0.8));
      bar->setBrush(QBrush(Qt::white));
      bar->setData(kStageBarKey, qs(to_string(s)));
      if (unhidden > 0)
        (new QGraphicsRectItem(QRectF(r.left() + 8, r.bottom() - 9, unhidden, 5), node))
            ->setBrush(QBrush(agentColour(agent).darker(160)));
      const QString unhidden_text = a.unhidden.has(s)
                                        ? stageCostText(a.unhidden[s], 3) + QStringLiteral(" µs (the bar's dark part)")
                                        : QStringLiteral("not measured");
      node->setToolTip(
          node->toolTip() +
          QStringLiteral("\nisolated %1 µs; unhidden %2").arg(stageCostText(a.isolated[s], 3), unhidden_text));
    }
  }

  // Edges: data solid; loop-carried as a dashed loop over the node; buffer reuse dashed, curving back.
  QPen data_pen(QColor(60, 60, 60), 1.6);
  QPen loop_pen(QColor(90, 90, 90), 1.4, Qt::DashLine);
  QPen buffer_pen(QColor(120, 120, 160), 1.2, Qt::DotLine);
  for (auto [from, to] : a.graph.edges(EdgeKind::data)) {
    if (!rects.count(from) || !rects.count(to)) continue;
    QRectF rf = rects[from], rt = rects[to];
    if (from == Stage::q_quant) {
      // Along the free row under the K chain, then up into qk from below.
      QPointF p0(rf.right(), rf.center().y()), p1(rt.center().x(), rt.bottom());
      QPainterPath path(p0);
      path.cubicTo(QPointF(p1.x(), p0.y()), QPointF(p1.x(), p0.y()), p1);
      addArrowHead(path, p1, QPointF(p1.x(), p1.y() + 20));
      auto* item = scene.addPath(path, data_pen);
      item->setZValue(1);
      item->setData(kEdgeKey, QStringLiteral("q_quant→%1").arg(qs(to_string(to))));
      continue;
    }
    QPointF p0(rf.right(), rf.center().y()), p1(rt.left(), rt.center().y());
    QPainterPath path(p0);
    path.cubicTo(QPointF((p0.x() + p1.x()) / 2, p0.y()), QPointF((p0.x() + p1.x()) / 2, p1.y()), p1);
    addArrowHead(path, p1, QPointF(p1.x() - 20, p1.y()));
    auto* item = scene.addPath(path, data_pen);
    item->setZValue(1);
    item->setData(kEdgeKey, QStringLiteral("%1→%2").arg(qs(to_string(from)), qs(to_string(to))));
  }
  for (auto [from, to] : a.graph.edges(EdgeKind::loop_carried)) {
    if (!rects.count(from)) continue;
    QRectF r = rects[from];
    QPointF p0(r.right() - 30, r.top()), p1(r.left() + 30, r.top());
    QPainterPath path(p0);
    path.cubicTo(QPointF(p0.x() + 10, r.top() - 45), QPointF(p1.x() - 10, r.top() - 45), p1);
    addArrowHead(path, p1, QPointF(p1.x() - 4, p1.y() - 12));
    auto* item = scene.addPath(path, loop_pen);
    item->setZValue(1);
    item->setToolTip(QStringLiteral("loop-carried: %1(n) → %2(n+1)").arg(qs(to_string(from)), qs(to_string(to))));
  }
  for (auto [from, to] : a.graph.edges(EdgeKind::buffer_reuse)) {
    if (!rects.count(from) || !rects.count(to)) continue;
    QRectF rf = rects[from], rt = rects[to];
    const bool below = rf.center().y() >= kRowStep;  // V chain curves under, K chain over
    QPointF p0(rf.center().x(), below ? rf.bottom() : rf.top());
    QPointF p1(rt.center().x(), below ? rt.bottom() : rt.top());
    double bulge = below ? 50 : -50;
    QPainterPath path(p0);
    path.cubicTo(QPointF(p0.x(), p0.y() + bulge), QPointF(p1.x(), p1.y() + bulge), p1);
    addArrowHead(path, p1, QPointF(p1.x(), p1.y() + bulge * 0.3));
    auto* item = scene.addPath(path, buffer_pen);
    item->setZValue(0.5);
    item->setToolTip(QStringLiteral("buffer reuse: %1(n) frees the slot %2(n+%3) fills")
                         .arg(qs(to_string(from)), qs(to_string(to)))
                         .arg(a.graph.buffer_depth()));
  }

  // Title: variant, II and its source.
  QString header = QStringLiteral("%1   B=%2 S=%3 Hq/Hk=%4/%5 D=%6 %7")
                       .arg(qs(a.op.variant_label()))
                       .arg(a.op.batch)
                       .arg(a.op.context)
                       .arg(a.op.q_heads)
                       .arg(a.op.kv_heads)
                       .arg(a.op.head_dim)
                       .arg(qs(to_string(a.op.cache)));
  QString sub;
  if (has_ii)
    sub = QStringLiteral("II %1 µs/tile from %2 costs — limited by %3 on %4")
              .arg(QString::number(a.ii.ii_us, 'g', 4),
                   a.ii_from_measured ? QStringLiteral("measured") : QStringLiteral("predicted"),
                   qs(to_string(a.ii.limiting_stage)), agentTitle(a.ii.limiting_agent));
  if (has_ii && !a.unknownStages().empty()) {
    QStringList names;
    for (Stage s : a.unknownStages()) names << qs(to_string(s));
    sub += QStringLiteral(" (unknown, counted as 0: %1)").arg(names.join(QStringLiteral(", ")));
  }
  if (!has_ii)
    sub = QStringLiteral("no stage costs: %1")
              .arg(a.prediction_note.empty() ? QStringLiteral("no matching case") : qs(a.prediction_note));
  if (std::isfinite(a.measured_ii_us))
    sub += QStringLiteral("   measured II %1 µs").arg(QString::number(a.measured_ii_us, 'g', 4));
  // The kernel II model's own II beside the measured one (their gap is what no stage explains),
  // and what limits it in our kernel: the design note's agents above run its compute stages
  // apart, where the wgmma kernels' one consumer warpgroup runs them in turn.
  if (a.kernel_ii)
    sub += QStringLiteral("   kernel II model %1%2 µs (%3 tokens/tile), limited by %4")
               .arg(a.kernel_ii->missing.empty() ? QString() : QStringLiteral(">= "))
               .arg(QString::number(a.kernel_ii->ii_us, 'g', 4))
               .arg(a.kernel_ii->tile_tokens)
               .arg(qs(analysis::describe_limit(*a.kernel_ii).what));
  if (a.source_case)
    sub += QStringLiteral("   case #%1 (%2)").arg(a.source_case->case_id).arg(qs(a.source_case->backend));
  if (!a.gpu_model_id.empty()) sub += QStringLiteral("   predicted for %1").arg(qs(a.gpu_model_id));
  auto* h = scene.addSimpleText(header, bold);
  h->setPos(0, -110);
  auto* s2 = scene.addSimpleText(sub, small);
  s2->setData(kIICaptionKey, true);
  s2->setPos(0, -86);

  // Legend: agents, then line styles.
  double y = 2 * kRowStep + kNodeH + 70, x = 0;
  for (Agent agent : kAllAgents) {
    scene.addRect(QRectF(x, y, 16, 16), QPen(agentColour(agent).darker(130)), QBrush(agentColour(agent).lighter(160)));
    auto* t = scene.addSimpleText(agentTitle(agent), small);
    t->setPos(x + 22, y);
    x += 40 + t->boundingRect().width();
  }
  y += 26;
  x = 0;
  struct LegendLine {
    QPen pen;
    const char* text;
  };
  for (const LegendLine& l :
       {LegendLine{data_pen, "data dependency"}, LegendLine{loop_pen, "loop-carried (tile n → n+1)"},
        LegendLine{buffer_pen, "buffer reuse (frees a ring slot)"},
        LegendLine{QPen(QColor(20, 20, 20), 5), "limiting stage (thick border)"}}) {
    scene.addLine(x, y + 8, x + 30, y + 8, l.pen);
    auto* t = scene.addSimpleText(QString::fromUtf8(l.text), small);
    t->setPos(x + 36, y);
    x += 60 + t->boundingRect().width();
  }
}

QStringList stageNodeNames(const QGraphicsScene& scene) {
  QStringList names;
  for (QGraphicsItem* item : scene.items())
    if (item->data(kStageNodeKey).isValid()) names << item->data(kStageNodeKey).toString();
  names.sort();
  return names;
}

QStringList isolatedBarNames(const QGraphicsScene& scene) {
  QStringList names;
  for (QGraphicsItem* item : scene.items())
    if (item->data(kStageBarKey).isValid()) names << item->data(kStageBarKey).toString();
  names.sort();
  return names;
}

QStringList limitingNodeNames(const QGraphicsScene& scene) {
  QStringList names;
  for (QGraphicsItem* item : scene.items())
    if (item->data(kStageNodeKey).isValid() && item->data(kLimitingKey).toBool())
      names << item->data(kStageNodeKey).toString();
  names.sort();
  return names;
}

}  // namespace tilepath::ui
