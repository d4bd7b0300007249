"""The value checks every room shares: a setting that cannot work is refused with a sentence naming it."""


def is_whole(v):
    return isinstance(v, int) and not isinstance(v, bool)  # True is an int to Python, not a size


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_value(name, value, ok, must_be):
    """Raise a ValueError naming `name` and its value unless ok(value)."""
    if not ok(value):
        raise ValueError(f"{name}={value!r} cannot work: {name} must be {must_be}")
