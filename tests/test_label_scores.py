"""Who LabelCheck lists: calibrated probabilities, cleanlab's estimate and
the list's bounds, on probabilities made to look like a model's."""

import numpy as np

from components.label_check import suspects


def smoothed_model(labels, classes, rng, sure=0.85):
  """Probabilities like a model trained with label smoothing: the given
  class near `sure` (never near 1), the rest spread over the others."""
  probabilities = rng.dirichlet(np.ones(classes), len(labels)) * (1 - sure)
  probabilities[np.arange(len(labels)), labels] += sure
  return probabilities


def test_calibration_makes_a_smoothed_model_as_sure_as_it_is_right():
  rng = np.random.default_rng(0)
  labels = rng.integers(0, 10, 5000)
  probabilities = smoothed_model(labels, 10, rng)
  temperature, calibrated = suspects.calibrate(labels, probabilities)
  # Right on every record, so sharper than the smoothing let it be.
  assert temperature < 1
  assert calibrated[np.arange(5000), labels].mean() > 0.98
  assert (calibrated.argmax(axis=1) == probabilities.argmax(axis=1)).all()
  np.testing.assert_allclose(calibrated.sum(axis=1), 1, rtol=1e-9)
  # A model right on half its records is made less sure instead.
  wrong = rng.random(5000) < 0.5
  noisy = labels.copy()
  noisy[wrong] = (labels[wrong] + 1) % 10
  assert suspects.calibrate(noisy, probabilities)[0] > 1


def test_confident_wrong_labels_come_first_and_agreed_ones_never():
  rng = np.random.default_rng(1)
  labels = np.repeat(np.arange(4), 500)
  probabilities = smoothed_model(labels, 4, rng)
  planted = rng.choice(2000, 30, replace=False)
  claimed = (labels[planted] + 1 + rng.integers(0, 3, 30)) % 4
  probabilities[planted] = 0.02
  probabilities[planted, claimed] = 0.94
  # Hard images whose given class the model still puts first.
  hard = np.setdiff1d(np.arange(2000), planted)[:40]
  probabilities[hard] = 0.2
  probabilities[hard, labels[hard]] = 0.4
  probabilities /= probabilities.sum(axis=1, keepdims=True)
  found = suspects.find_suspects(labels, probabilities)
  assert set(found.indices.tolist()) == set(planted.tolist())
  assert abs(found.estimate - 30) <= 3
  by_index = dict(zip(found.indices.tolist(), found.suggested.tolist()))
  assert [by_index[i] for i in planted.tolist()] == claimed.tolist()
  assert found.disagreements == 30


def test_unsure_disagreements_are_listed_to_a_share_of_the_split():
  # MNIST's real label errors are ambiguous images: the model puts another
  # class first, unsure, and nothing reaches confident learning's
  # thresholds. The list still reaches MIN_SHARE of the split, least
  # self-confident first, and never past the disagreements.
  rng = np.random.default_rng(2)
  labels = np.repeat(np.arange(10), 500)
  probabilities = smoothed_model(labels, 10, rng, sure=0.95)
  unsure = rng.choice(5000, 80, replace=False)
  other = (labels[unsure] + 3) % 10
  probabilities[unsure] = 0.03
  probabilities[unsure, labels[unsure]] = np.linspace(0.1, 0.3, 80)
  probabilities[unsure, other] = 0.45
  probabilities /= probabilities.sum(axis=1, keepdims=True)
  found = suspects.find_suspects(labels, probabilities)
  assert found.estimate < 10
  assert len(found.indices) == 50  # 1% of 5,000.
  # The 50 of least given probability.
  assert set(found.indices.tolist()) == set(unsure[:50].tolist())
  few = np.concatenate([np.setdiff1d(np.arange(5000), unsure)[:1000],
                        unsure[:3]])
  assert len(suspects.find_suspects(
      labels[few], probabilities[few]).indices) == 3


def test_the_list_stops_at_its_largest_share():
  rng = np.random.default_rng(3)
  labels = rng.integers(0, 5, 1000)
  probabilities = smoothed_model(labels, 5, rng)
  wrong = rng.random(1000) < 0.3
  probabilities[wrong] = smoothed_model((labels[wrong] + 1) % 5, 5, rng)
  found = suspects.find_suspects(labels, probabilities)
  assert found.estimate > 200
  assert len(found.indices) == 50  # 5% of 1,000.
  averaged = suspects.find_suspects(labels, probabilities,
                                    averaged_over_run=True)
  assert len(averaged.indices) == 50 and averaged.estimate == -1
  assert averaged.temperature == 1.0


def test_averaged_probabilities_list_every_record_another_class_leads():
  # Averaged over a run from its first epochs, every class is unlikely: the
  # records another class leads are listed, least self-confident first.
  labels = np.repeat(np.arange(3), 50)
  probabilities = np.full((150, 3), 0.3)
  probabilities[np.arange(150), labels] = 0.4
  probabilities[[5, 60]] = [[0.3, 0.38, 0.32], [0.39, 0.28, 0.33]]
  found = suspects.find_suspects(labels, probabilities,
                                 averaged_over_run=True)
  assert found.indices.tolist() == [60, 5]
  assert found.suggested.tolist() == [0, 1]


def test_the_estimate_on_a_sample_counts_the_sample():
  # Confident learning's estimate of wrong labels on a hash-like sample (one
  # chosen regardless of the label) is a count of the sample's: about its
  # share of the whole split's.
  rng = np.random.default_rng(3)
  records, classes = 20_000, 5
  labels = rng.integers(0, classes, records)
  probabilities = rng.dirichlet(np.ones(classes), records) * 0.3
  likely = labels.copy()
  wrong = rng.random(records) < 0.04
  likely[wrong] = (labels[wrong] + rng.integers(1, classes, wrong.sum())
                   ) % classes
  probabilities[np.arange(records), likely] += 0.7
  whole = suspects.estimated_issues(labels, probabilities)
  assert abs(whole - wrong.sum()) < 0.2 * wrong.sum()
  chosen = rng.random(records) < 0.1
  part = suspects.estimated_issues(labels[chosen], probabilities[chosen])
  assert abs(part - whole * chosen.mean()) < 0.25 * whole * chosen.mean()




def test_fold_models_far_weaker_than_the_trainers_are_too_weak():
  labels = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
  right = np.eye(3)[labels]
  half_wrong = np.eye(3)[np.where(np.arange(10) < 5, (labels + 1) % 3, labels)]
  assert suspects.disagreement(labels, right) == 0.0
  assert suspects.disagreement(labels, half_wrong) == 0.5
  assert suspects.disagreement(labels[:0], right[:0]) == 0.0
  # Wrong labels: the folds and the Trainer's model disagree alike.
  assert not suspects.folds_too_weak(0.06, 0.05)
  assert not suspects.folds_too_weak(0.35, 0.15)
  # Clean labels a weak fold model misplaces.
  assert suspects.folds_too_weak(0.33, 0.0)
  assert suspects.folds_too_weak(0.30, 0.05)
