"""The module image_model.yaml names: every command checks it exists; the cost table never runs it."""


def build_model(config): ...


def make_dataset(context): ...
