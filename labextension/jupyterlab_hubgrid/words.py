"""The words for session states, as the Lab UI says them (labextension/src/
words.ts, ``STATE_LABELS``): the CLI and the notebook widgets print these,
never the API's own words, so that "running" in a terminal is "running" in
the Sessions panel. tests/test_cli.py checks that both tables agree.

=============  ===========
API state      shown as
=============  ===========
``allocated``  running
``pending``    waiting
``released``   ended
``cancelled``  cancelled
=============  ===========
"""

from __future__ import annotations

#: an allocation's state (the API's word) -> the word people read
STATE_LABELS = {
    "allocated": "running",
    "pending": "waiting",
    "released": "ended",
    "cancelled": "cancelled",
}
#: a people's word -> the API's state (what ``--state`` also accepts)
STATES_BY_LABEL = {label: state for state, label in STATE_LABELS.items()}


def state_label(state: str | None) -> str:
    """The label of an allocation state; an unknown state shows as it is."""
    if state is None:
        return "-"
    return STATE_LABELS.get(state, state)


def api_state(word: str) -> str:
    """``running`` or ``allocated`` -> ``allocated``; ValueError otherwise."""
    if word in STATE_LABELS:
        return word
    if word in STATES_BY_LABEL:
        return STATES_BY_LABEL[word]
    raise ValueError(f"{word!r} is not a state: one of "
                     f"{', '.join(STATES_BY_LABEL)} (or {', '.join(STATE_LABELS)})")
