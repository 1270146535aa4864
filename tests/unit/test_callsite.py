"""det.callsite: what a call site's source says (issue 24.5): the
argument det's call was given, and which functions are one-line wrappers
that only forward their parameter (the site is then their caller's)."""

from __future__ import annotations

from pathlib import Path

from det.callsite import INTERPOSED, call_args, forwarded, object_expression
from det.symbols import outside_wrappers

SRC = """\
#include <pthread.h>
static void lock(pthread_mutex_t *m) { pthread_mutex_lock(m); }
static void unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}
static void lock_both(pthread_mutex_t *a, pthread_mutex_t *b) { lock(a); lock(b); }
static void work(struct q *q, int mine)
{
	lock(&q->mut);
	pthread_mutex_lock(mine ? &ledger : &q->mut);
	pthread_cond_wait(&q->ready,
			&q->mut);
	unlock(&q->mut);
}
static long counted(pthread_mutex_t *m)
{
	long n = 0;
	for (int i = 0; i < 10; i++)
		n += i;
	pthread_mutex_lock(m);
	return n;
}
"""


def source(tmp_path: Path) -> str:
    p = tmp_path / "w.c"
    p.write_text(SRC)
    return str(p)


def line(text: str, after: int = 0) -> int:
    """The first line holding text, after line `after`."""
    return next(i for i, t in enumerate(SRC.splitlines(), 1) if i > after and text in t)


def test_call_arguments_are_read_over_lines(tmp_path: Path) -> None:
    f = source(tmp_path)
    assert call_args(f, line("pthread_cond_wait"), INTERPOSED) == ["&q->ready", "&q->mut"]
    assert call_args(f, line("lock(&q->mut)"), "lock") == ["&q->mut"]
    assert call_args(f, line("lock(&q->mut)"), INTERPOSED) is None, "no interposed call on the line"
    assert call_args(str(tmp_path / "missing.c"), 3, INTERPOSED) is None


def test_wrappers_are_short_functions_forwarding_a_parameter(tmp_path: Path) -> None:
    f = source(tmp_path)
    assert forwarded(f, line("static void lock("), "lock", INTERPOSED) == 0
    assert forwarded(f, line("pthread_mutex_unlock(m)"), "unlock", INTERPOSED) == 0
    assert forwarded(f, line("static void lock_both"), "lock_both", "lock") == 0, "the first call on the line"
    assert forwarded(f, line("lock(&q->mut)"), "work", "lock") is None, "an expression, not a parameter"
    assert forwarded(f, line("pthread_mutex_lock(m);", line("counted(")), "counted", INTERPOSED) is None, \
        "a longer function is not a wrapper"


def test_the_site_is_the_first_frame_outside_wrappers(tmp_path: Path) -> None:
    f = source(tmp_path)
    inlined = [("lock", f, line("static void lock(")), ("work", f, line("lock(&q->mut)"))]
    assert outside_wrappers(inlined) == 1
    assert outside_wrappers([("work", f, line("mine ? &ledger"))]) == 0
    assert outside_wrappers([("lock", f, line("static void lock("))]) == 0, "no caller known: the wrapper itself"


def test_object_expressions_are_places_never_computations() -> None:
    assert object_expression("&q->mut") == "q->mut"
    assert object_expression("&(q->mut)") == "q->mut"
    assert object_expression("lk") == "*lk"
    assert object_expression("q->lockp") == "*q->lockp"
    assert object_expression("&pool.locks[2]") == "pool.locks[2]"
    assert object_expression("mine ? &ledger : &q->mut") is None
    assert object_expression("get_lock(q)") is None
    assert object_expression("p + 1") is None
