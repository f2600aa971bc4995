#pragma once
// Draws one variant's stage graph into a QGraphicsScene: left to right, K chain
// above, V chain below, softmax/PV/accumulate after; nodes coloured by agent,
// labelled with measured and predicted cost per tile; the limiting stage gets a
// thick border (for a cuda case with a kernel II model, the stages that limit our kernel:
// both loads when its ring limits); data edges solid, loop-carried and buffer-reuse edges dashed. A stage
// with an isolated cost gets a bar under its text: its length is the isolated cost (on
// one scale for the whole graph), its dark part the unhidden part (the removed cost).

#include <QStringList>

#include "ui/variant_analysis.h"

class QGraphicsScene;

namespace tilepath::ui {

// Node items carry their stage name under this data key (QGraphicsItem::data).
inline constexpr int kStageNodeKey = 0;
// The isolated-cost bar of a node (its full length: the isolated cost; its dark part: the
// unhidden part, the removed cost) carries its stage name under this key.
inline constexpr int kStageBarKey = 2;
// The "tile: N tokens" caption carries true under this key.
inline constexpr int kTileCaptionKey = 3;
// The II line under the title (the II, measured II, kernel II model) carries true under this key.
inline constexpr int kIICaptionKey = 4;
// Data edges carry "from→to" (stage names) under this key.
inline constexpr int kEdgeKey = 5;

void buildStageGraphScene(QGraphicsScene& scene, const VariantAnalysis& analysis);
// Stage names of the node items in the scene (sorted), e.g. for tests.
QStringList stageNodeNames(const QGraphicsScene& scene);
// The stages drawn as limiting (sorted; empty if none).
QStringList limitingNodeNames(const QGraphicsScene& scene);
// Stage names of the nodes drawn with an isolated-cost bar (sorted).
QStringList isolatedBarNames(const QGraphicsScene& scene);

}  // namespace tilepath::ui
