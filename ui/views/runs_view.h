#pragma once
// Runs view: runs table, cases table (filter + sort through a proxy), a side-by-side
// comparison of the two selected cases (fields × A, B, B − A, B / A) and the profiler panel
// of the first, with the files kept with it. A reload empties the comparison and the panel.

#include <optional>

#include <QWidget>

#include "core/store/run_store.h"

class QAbstractItemModel;
class QLabel;
class QLineEdit;
class QTableView;

namespace tilepath::ui {

class CaseComparisonModel;
class CasesModel;
class CaseFilterProxy;
class DatabaseSession;
class ProfilerPanel;
class RunsModel;

class RunsView : public QWidget {
  Q_OBJECT
 public:
  explicit RunsView(DatabaseSession* session, QWidget* parent = nullptr);
  RunsModel* runsModel() const { return runs_model_; }
  CasesModel* casesModel() const { return cases_model_; }
  CaseComparisonModel* comparisonModel() const { return comparison_model_; }
  QTableView* casesTable() const { return cases_table_; }
  QTableView* runsTable() const { return runs_table_; }
  QTableView* comparisonTable() const { return comparison_table_; }
  ProfilerPanel* profilerPanel() const { return profiler_; }
  // The cases table as the user sees it (filtered, sorted), e.g. for CSV export.
  const QAbstractItemModel* visibleCases() const;
  void setFilterText(const QString& text);
  // The filter's error ("unknown filter key ..., allowed: ..."); empty when it parses.
  QString filterError() const { return filter_error_text_; }
  QString countsText() const;
  // Selects cases by id (for tests and for "show this case").
  void selectCases(const QList<qint64>& caseIds);

 public slots:
  void reload();

 signals:
  // The first selected case (the one the stage graph / timeline measure against).
  void caseSelected(const tilepath::CaseSummary& summary);

 private:
  DatabaseSession* session_;
  RunsModel* runs_model_;
  CasesModel* cases_model_;
  CaseFilterProxy* cases_proxy_;
  CaseComparisonModel* comparison_model_;
  QTableView *runs_table_, *cases_table_, *comparison_table_;
  ProfilerPanel* profiler_;
  QLineEdit* filter_;
  QLabel* counts_;
  QLabel* filter_error_;
  QString filter_error_text_;
  void applyFilter(const QString& text);
  void updateCounts();
  void onCaseSelectionChanged();
  void onRunSelectionChanged();
};

}  // namespace tilepath::ui
