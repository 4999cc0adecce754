# cloudtrain training image, CPU. Build from the repository root:
#   docker build -f containers/cpu.Dockerfile -t REGISTRY/cloudtrain-cpu:2.21.0 .
# The TensorFlow tag must match the runtime's pin in pyproject.toml (tests check it).
FROM tensorflow/tensorflow:2.21.0

# Keras pinned to the release whose multi-worker fit defects the runtime probes for.
RUN pip install --no-cache-dir "keras==3.15.1"

# The MLflow client, for a spec's tracking: section (the tracking extra of pyproject.toml).
RUN pip install --no-cache-dir "mlflow-skinny>=3.7,<4"

# The runtime only (--no-deps): the SDK's pydantic/click are not needed in the container.
COPY pyproject.toml README.md /src/
COPY sdk /src/sdk
COPY entrypoints /src/entrypoints
RUN pip install --no-cache-dir --no-deps /src && rm -rf /src

WORKDIR /workspace
# Exec form, so the runtime receives SIGTERM; SageMaker's `train` argument is accepted.
ENTRYPOINT ["cloudtrain-runtime"]
