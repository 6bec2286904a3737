"""scikit-learn's own behavioural tests of GridSearchCV and RandomizedSearchCV, run on parcv's.

The tests are read from the installed scikit-learn (``sklearn/model_selection/
tests/test_search.py``, so they always match its version; 1.9.1 when this list
was made) with ``GridSearchCV`` and ``RandomizedSearchCV`` bound to
:class:`parcv.GridSearchCV` and :class:`parcv.RandomizedSearchCV` (see
``tests/sklearn_suite.py``): their assertions are unchanged. They run on the
serial backend; a few also on the local process pool (marked slow). Cases that
parametrize scikit-learn's Halving searches are dropped (parcv has none).

Left out, one line each (the rest of the file's tests run here):

- test_parameter_grid, test_param_sampler, test_validate_parameter_input,
  test_parameters_sampler_replacement: test ParameterGrid / ParameterSampler, not a search.
- test_yield_masked_array_for_each_param, test_yield_masked_array_no_runtime_warning,
  test__custom_fit_no_run_search, test_custom_run_search: scikit-learn's private helpers and
  BaseSearchCV subclassing hooks (``_run_search``), not public behaviour.
- test_search_callbacks_* (6 tests): scikit-learn's experimental callback API; parcv runs
  units on its own backends and does not call scikit-learn callbacks.
- test_multi_metric_search_forwards_metadata, test_score_rejects_params_with_no_routing_enabled,
  test_search_cv_sample_weight_equivalence, test_unsupported_sample_weight_scorer: metadata
  routing and sample_weight forwarded to scorers; parcv splits fit parameters but does not
  route metadata to scorers or splitters.
- test_random_search_bad_cv: a splitter whose get_n_splits disagrees with split; scikit-learn
  refuses it ("inconsistent results"), parcv's splits do not check it yet.
- test_grid_search_groups, test_grid_search_bad_param_grid, test_empty_cv_iterator_error:
  assert scikit-learn's error messages; parcv refuses the same input with its own messages.
- test_grid_search_no_score, test_gridsearch_no_predict, test_unsupervised_grid_search: y=None
  (unsupervised); parcv needs targets.
- test_SearchCV_with_fit_params, test_y_as_list, test_gridsearch_nd: CheckingClassifier takes
  any X but does not declare 2-D input in its tags, which parcv's X check reads.
- test_search_with_2d_array: stratified 3-fold CV with a class of 2 members; parcv refuses it
  before fitting (scikit-learn warns).
- test_search_cv_verbose_3: scikit-learn's per-fit log lines on stdout; parcv's verbose shows
  its progress bar instead.
- test_search_html_repr: the HTML diagram uses scikit-learn's private visual-block hook.
"""

from __future__ import annotations

import pytest
from sklearn_suite import load_suite, parcv_only

pytestmark = [
    # scikit-learn's ParameterSampler warns when n_iter exceeds the grid, for its class as ours.
    pytest.mark.filterwarnings("ignore:The total space of parameters:UserWarning"),
    # SGDClassifier.predict_log_proba of probabilities 0 (test_stochastic_gradient_loss_param).
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning"),
    # NaN scores (failed fits, R^2 on one-sample folds): scikit-learn's warning, and parcv's
    # when every mean is NaN; the tests that expect them catch them.
    pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite"),
    pytest.mark.filterwarnings("ignore:every candidate's mean score:UserWarning"),
    # Estimators' own warnings inside the fits reach the caller (once per category), as in
    # scikit-learn's serial loop, where its test configuration lets them through.
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore:R\\^2 score is not well-defined:UserWarning"),
]

KEPT = [
    "test_grid_search",
    "test_grid_search_pipeline_steps",
    "test_grid_search_score_method",
    "test_classes__property",
    "test_trivial_cv_results_attr",
    "test_no_refit",
    "test_grid_search_error",
    "test_grid_search_one_grid_point",
    "test_grid_search_when_param_grid_includes_range",
    "test_grid_search_sparse",
    "test_grid_search_sparse_scoring",
    "test_grid_search_precomputed_kernel",
    "test_grid_search_precomputed_kernel_error_nonsquare",
    "test_refit",
    "test_refit_callable",
    "test_refit_callable_invalid_type",
    "test_refit_callable_out_bound",
    "test_refit_callable_multi_metric",
    "test_X_as_list",
    "test_pandas_input",
    "test_grid_search_cv_results",
    "test_random_search_cv_results",
    "test_search_default_iid",
    "test_grid_search_cv_results_multimetric",
    "test_random_search_cv_results_multimetric",
    "test_search_cv_score_samples_error",
    "test_search_cv_score_samples_method",
    "test_search_cv_results_rank_tie_breaking",
    "test_search_cv_timing",
    "test_grid_search_correct_score_results",
    "test_pickle",
    "test_grid_search_with_multioutput_data",
    "test_predict_proba_disabled",
    "test_grid_search_allows_nans",
    "test_stochastic_gradient_loss_param",
    "test_search_train_scores_set_to_false",
    "test_grid_search_cv_splits_consistency",
    "test_transform_inverse_transform_round_trip",
    "test_callable_single_metric_same_as_single_string",
    "test_n_features_in",
    "test_search_cv_pairwise_property_delegated_to_base_estimator",
    "test_search_cv__pairwise_property_delegated_to_base_estimator",
    "test_search_cv_pairwise_property_equivalence_of_precomputed",
    "test_scalar_fit_param",
    "test_scalar_fit_param_compat",
    "test_search_cv_using_minimal_compatible_estimator",
    "test_search_estimator_param",
    "test_cv_results_dtype_issue_29074",
    "test_search_with_estimators_issue_29157",
    "test_cv_results_multi_size_array",
    "test_grid_search_failing_classifier",
    "test_grid_search_classifier_all_fits_fail",
    "test_grid_search_failing_classifier_raise",
    "test_search_cv_results_none_param",
    "test_callable_multimetric_confusion_matrix",
    "test_callable_multimetric_same_as_list_of_strings",
    "test_callable_multimetric_error_on_invalid_key",
    "test_callable_multimetric_error_failing_clf",
    "test_callable_multimetric_clf_all_fits_fail",
    # Serial only: its scorer counts its own calls (NaN on every 5th); on a process pool or
    # Dask each worker counts its own copy's calls, so which folds are NaN depends on the
    # backend (and may be none).
    "test_searchcv_raise_warning_with_non_finite_score",
]

# Also on the local process pool: fit, refit (graph and callable), cv_results_, pickling.
ON_THE_POOL = [
    "test_grid_search",
    "test_refit_callable",
    "test_grid_search_cv_results_multimetric",
    "test_random_search_cv_results",
    "test_pickle",
]

_serial = load_suite("serial")
for _name in KEPT:
    globals()[_name] = parcv_only(getattr(_serial, _name))

_local = load_suite("local")
for _name in ON_THE_POOL:
    globals()[f"{_name}_local_pool"] = pytest.mark.slow(parcv_only(getattr(_local, _name)))


def test_the_suite_runs_parcv_classes():
    import parcv

    assert issubclass(_serial.GridSearchCV, parcv.GridSearchCV)
    assert issubclass(_serial.RandomizedSearchCV, parcv.RandomizedSearchCV)
    assert _serial.GridSearchCV(None, {}).backend == "serial"
    assert _local.GridSearchCV(None, {}).backend == "local"
