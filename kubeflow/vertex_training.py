"""The Trainer as a Vertex AI custom job with worker pools (--target vertex
--trainer-workers N).

Each replica runs TFX's own Trainer executor in --image, with the TF_CONFIG
Vertex AI gives it. Why and how: docs/training.md, "Several workers".
"""

from typing import Any, Dict, List


def worker_pool_specs(image: str, workers: int, machine_type: str,
                      gpus: int = 0, gpu_type: str = '') -> List[Dict[str, Any]]:
  """Vertex AI's workerPoolSpecs: the chief, then the other workers.

  Args:
    image: the container image every replica runs.
    workers: replicas in all, the chief included; 1 or more.
    machine_type: each replica's machine, e.g. 'n1-standard-8'.
    gpus: accelerators per replica; 0: none.
    gpu_type: their accelerator type, e.g. 'NVIDIA_TESLA_T4'.
  """
  machine_spec: Dict[str, Any] = {'machine_type': machine_type}
  if gpus:
    machine_spec.update(accelerator_type=gpu_type, accelerator_count=gpus)

  def pool(replicas: int) -> Dict[str, Any]:
    # TFX sets the command (its executor entrypoint) of every pool.
    return {'machine_spec': dict(machine_spec), 'replica_count': replicas,
            'container_spec': {'image_uri': image}}

  return [pool(1)] + ([pool(workers - 1)] if workers > 1 else [])


def trainer_custom_config(project: str, region: str, image: str,
                          workers: int, machine_type: str, gpus: int = 0,
                          gpu_type: str = '') -> Dict[str, Any]:
  """The custom_config entries that make TFX's Vertex AI Trainer start the
  custom job (its keys, from TFX's extension).

  Args:
    project: the Google Cloud project the job runs in.
    region: its region, e.g. 'europe-west4'.
    image: the container image every replica runs.
    workers: replicas in all, the chief included; 1 or more.
    machine_type: each replica's machine, e.g. 'n1-standard-8'.
    gpus: accelerators per replica; 0: none.
    gpu_type: their accelerator type, e.g. 'NVIDIA_TESLA_T4'.
  """
  from tfx.extensions.google_cloud_ai_platform import constants  # pylint: disable=g-import-not-at-top
  from tfx.extensions.google_cloud_ai_platform.trainer import executor  # pylint: disable=g-import-not-at-top
  return {
      constants.ENABLE_VERTEX_KEY: True,
      constants.VERTEX_REGION_KEY: region,
      executor.TRAINING_ARGS_KEY: {
          'project': project,
          'job_spec': {'worker_pool_specs': worker_pool_specs(
              image, workers, machine_type, gpus, gpu_type)},
      },
  }
