#pragma once
// Backends view: the plugins, their devices (or why none), load problems, and
// "Load plugin…" (PluginHost::load_file).

#include <QWidget>

#include "core/plugin_host.h"

class QLabel;
class QTableView;

namespace tilepath::ui {

class BackendsModel;

class BackendsView : public QWidget {
  Q_OBJECT
 public:
  explicit BackendsView(PluginHost* host, QWidget* parent = nullptr);
  BackendsModel* model() const { return model_; }
  // Loads one plugin file; shows the reason when it fails. Returns success.
  bool loadPlugin(const QString& path);

 public slots:
  void refresh();
  void chooseAndLoadPlugin();

 signals:
  void backendsChanged();

 private:
  PluginHost* host_;
  BackendsModel* model_;
  QTableView* table_;
  QLabel* search_dirs_;
};

}  // namespace tilepath::ui
