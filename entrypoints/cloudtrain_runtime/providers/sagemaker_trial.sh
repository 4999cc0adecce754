#!/bin/bash
# A sweep trial on a SageMaker Deep Learning Container (image: auto).
#
# The image starts as `docker run IMAGE train`: its entrypoint runs the SageMaker training
# toolkit (sagemaker-training, with the TensorFlow toolkit as SAGEMAKER_TRAINING_MODULE), which
# downloads the code bundle named by the hyperparameter sagemaker_submit_directory, unpacks it
# into /opt/ml/code and runs this file, named by sagemaker_program. A name ending in .sh is a
# command to the toolkit (sagemaker_training/_entry_point_type.py), so it neither pip-installs
# the project (a setup.py) nor its requirements.txt: the runtime installs those itself.
#
# It starts the runtime as a training job's own command starts: the image's CUDA set-up
# sourced first (CLOUDTRAIN_IMAGE_SETUP: the image's entrypoint runs it in a child shell,
# whose LD_LIBRARY_PATH never reaches us), then the runtime package shipped beside this file.
# The toolkit also passes the trial's hyperparameters as arguments; the runtime reads them
# from hyperparameters.json instead (cloudtrain_runtime.hparams), so they are not passed on.
if [ -n "${CLOUDTRAIN_IMAGE_SETUP:-}" ]; then
    setup="${CLOUDTRAIN_ROOT%/}${CLOUDTRAIN_IMAGE_SETUP}"
    if [ -f "$setup" ]; then . "$setup" >/dev/null; fi
fi
runtime="$(cd "$(dirname "$0")/../.." && pwd)"
export PYTHONPATH="$runtime${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m cloudtrain_runtime
