#pragma once
// Table of the plugins the host found: one row per device of each plugin, one
// row for a plugin with no devices (with the reason), one row per problem file.

#include <QAbstractTableModel>

#include "core/plugin_host.h"

namespace tilepath::ui {

class BackendsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { File, Plugin, Version, Abi, Device, Arch, SMs, MemoryGiB, BandwidthGBs, Note, ColumnCount };
  enum class RowKind { device, no_device, problem };

  explicit BackendsModel(QObject* parent = nullptr);
  // The host is borrowed (it outlives the model); nullptr shows an empty table.
  void setHost(const PluginHost* host);
  // Call after the host changed (discover, load_file).
  void refresh();

  RowKind rowKind(int row) const;
  const Backend* backendAt(int row) const;  // nullptr for problem rows

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    RowKind kind;
    const Backend* backend = nullptr;
    int device = -1;
    int problem = -1;
  };
  const PluginHost* host_ = nullptr;
  std::vector<Row> rows_;
  void rebuild();
};

}  // namespace tilepath::ui
