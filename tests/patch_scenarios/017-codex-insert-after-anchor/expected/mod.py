def f():
    return 1


def g():
    """Doc."""
    return 2
