"""Installs the pipeline's packages (dependencies come from requirements.lock).

`make venv` runs `pip install --no-deps -e .` after installing the lock file:
the lock pins every package, and TFX 1.16 declares Requires-Python <3.11
although it runs on 3.11, so pip must not re-resolve anything here.
"""

import setuptools

setuptools.setup(
    name='tfx-image-pipeline',
    version='0.1.0',
    description='A TFX pipeline from raw labelled images to a served CNN.',
    python_requires='>=3.9,<3.12',
    packages=setuptools.find_packages(
        include=['records', 'records.*', 'components', 'components.*',
                 'modules', 'modules.*', 'pipeline', 'pipeline.*',
                 'metadata', 'metadata.*', 'inspector', 'inspector.*',
                 'runs', 'runs.*',
                 'kubeflow', 'kubeflow.*', 'data', 'data.*',
                 'predict', 'predict.*']),
    package_data={'pipeline': ['schema/*/*.pbtxt'],
                  'inspector': ['templates/*']},
    py_modules=['local_runner'],
    entry_points={
        'console_scripts': [
            'image-pipeline=local_runner:main',
            'image-pipeline-inspect=inspector.commands:main',
            'image-pipeline-predict=predict.cli:main',
        ],
    },
)
