#include "ui/models/backends_model.h"

#include <QBrush>
#include <QFileInfo>

#include "ui/qt_text.h"

namespace tilepath::ui {

BackendsModel::BackendsModel(QObject* parent) : QAbstractTableModel(parent) {}

void BackendsModel::setHost(const PluginHost* host) {
  beginResetModel();
  host_ = host;
  rebuild();
  endResetModel();
}

void BackendsModel::refresh() {
  beginResetModel();
  rebuild();
  endResetModel();
}

void BackendsModel::rebuild() {
  rows_.clear();
  if (!host_) return;
  for (const auto& backend : host_->backends()) {
    if (backend->devices().empty()) {
      rows_.push_back({RowKind::no_device, backend.get(), -1, -1});
      continue;
    }
    for (int d = 0; d < static_cast<int>(backend->devices().size()); ++d)
      rows_.push_back({RowKind::device, backend.get(), d, -1});
  }
  for (int p = 0; p < static_cast<int>(host_->problems().size()); ++p)
    rows_.push_back({RowKind::problem, nullptr, -1, p});
}

BackendsModel::RowKind BackendsModel::rowKind(int row) const { return rows_.at(row).kind; }
const Backend* BackendsModel::backendAt(int row) const { return rows_.at(row).backend; }

int BackendsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int BackendsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BackendsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const Row& row = rows_[index.row()];
  if (row.kind == RowKind::problem) {
    const PluginProblem& p = host_->problems()[row.problem];
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
      if (index.column() == File) return role == Qt::ToolTipRole ? qs(p.file) : QFileInfo(qs(p.file)).fileName();
      if (index.column() == Note) return QStringLiteral("not loaded: ") + qs(p.reason);
    }
    if (role == Qt::ForegroundRole) return QBrush(QColor(180, 30, 30));
    return {};
  }
  const Backend& b = *row.backend;
  const DeviceInfo* dev = row.kind == RowKind::device ? &b.devices()[row.device] : nullptr;
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case File:
        return role == Qt::ToolTipRole ? qs(b.file()) : QFileInfo(qs(b.file())).fileName();
      case Plugin:
        return qs(b.name());
      case Version:
        return qs(b.version());
      case Abi:
        return QStringLiteral("%1.%2").arg(b.abi_major()).arg(b.abi_minor());
      case Device:
        return dev ? qs(dev->name) : QVariant();
      case Arch:
        return dev ? qs(dev->arch) : QVariant();
      case SMs:
        return dev ? QVariant(dev->sm_count) : QVariant();
      case MemoryGiB:
        return dev ? QVariant(QString::number(dev->memory_bytes / (1024.0 * 1024 * 1024), 'f', 1)) : QVariant();
      case BandwidthGBs:
        return dev ? QVariant(QString::number(dev->bandwidth_gbps, 'f', 0)) : QVariant();
      case Note:
        return dev ? QVariant() : QVariant(QStringLiteral("no devices: ") + qs(b.no_device_reason()));
    }
  }
  if (role == Qt::ForegroundRole && row.kind == RowKind::no_device && index.column() == Note)
    return QBrush(QColor(150, 100, 0));
  if (role == Qt::TextAlignmentRole &&
      (index.column() == SMs || index.column() == MemoryGiB || index.column() == BandwidthGBs))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant BackendsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {"File", "Plugin",       "Version",          "ABI", "Device", "Arch",
                                           "SMs",  "Memory (GiB)", "Bandwidth (GB/s)", "Note"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromLatin1(names[section])) : QVariant();
}

}  // namespace tilepath::ui
