#!/usr/bin/env python3
"""Tests of scripts/e2e.py's judge on made-up ledgers (standard library only):
frames written before a stop's mark are required, those after it on the
stopped bot's connection may be missing and are said, the restarted bot's
connection is required, and a tally above the ledger fails.

    python3 scripts/e2e.d/judge_test.py
"""
import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("e2e", os.path.join(HERE, "..", "e2e.py"))
e2e = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e)

CLIENT = "c1"
LIVE = 7


def frame(seq, conn, event, user, fid, **amounts):
    return dict(
        writeSeq=seq, dj="main", liveId=LIVE, clientId=CLIENT, connection=conn, event=event,
        id=fid, userId=user, isDj=False, hearts=amounts.get("hearts", 0),
        paid=amounts.get("paid", False), donated=amounts.get("donated", 0),
    )


# Run 1's connection opened at 1; the mark at 10; run 2 started at 12 and
# its connection opened at 13; the final mark at 30.
FRAMES = [
    frame(2, 0, "presence", "u1", "1-0"),
    frame(3, 0, "like", "u1", "1-1", hearts=5, paid=True),
    frame(4, 0, "chat", "u2", "1-2"),
    frame(11, 0, "chat", "u1", "1-3"),           # after the mark, old connection
    frame(12, 0, "donation", "u2", "1-4", donated=300),  # after the mark, old connection
    frame(14, 1, "like", "u2", "1-5", hearts=2),  # the restarted bot's connection
    frame(15, 1, "chat", "u1", "1-3"),            # 1-3 again on the new connection
]
RUNS = [(0, 10), (12, 30)]


def person(**fields):
    out = {f: 0 for f in e2e.FIELDS}
    out["nickname"] = None
    out.update(fields)
    return out


LEDGER_PEOPLE = {
    "u1": person(joins=1, hearts=5, paidHearts=5, chats=1),
    "u2": person(chats=1, donated=300, donations=1, hearts=2),
}
LEDGER = {"broadcasts": [{"dj": "main", "liveId": LIVE, "bots": [{
    "clientId": CLIENT, "integration": "int-1",
    "connections": [{"openedSeq": 1}, {"openedSeq": 13}],
    "totals": {"hearts": 7, "donated": 300, "attendance": 1, "people": LEDGER_PEOPLE},
}]}]}


def tally(people):
    return {"broadcasts": [{
        "liveId": LIVE,
        "hearts": sum(p["hearts"] for p in people.values()),
        "donated": sum(p["donated"] for p in people.values()),
        "attendance": sum(1 for p in people.values() if p["joins"]),
        "people": people,
    }]}


def judge(people):
    return e2e.judge_tally(LEDGER, CLIENT, tally(people), FRAMES, RUNS)


class Judge(unittest.TestCase):
    def test_everything_read_passes_and_says_nothing_was_missed(self):
        problems, _, notes = judge(dict(LEDGER_PEOPLE))
        self.assertEqual(problems, [])
        self.assertEqual(len(notes), 1)
        self.assertIn("1 frame(s) written to the stopped bot after its mark (50 ms before the signal): 1 read, 0 missed", notes[0])

    def test_a_frame_written_after_the_mark_may_be_missing_and_is_said(self):
        people = dict(LEDGER_PEOPLE, u2=person(chats=1, hearts=2))
        problems, _, notes = judge(people)
        self.assertEqual(problems, [])
        self.assertIn("0 read, 1 missed (1 donation (300 donated); 1 people: u2; written as #12)", notes[0])

    def test_a_frame_written_before_the_mark_must_be_there(self):
        people = dict(LEDGER_PEOPLE, u1=person(joins=1, hearts=0, chats=1))
        problems, _, _ = judge(people)
        self.assertTrue(
            any("person u1: hearts 0 < 5 written before the bot was stopped" in p for p in problems),
            problems,
        )
        self.assertTrue(any("#3 like (run 1's connection 0)" in p for p in problems), problems)

    def test_the_restarted_bots_connection_is_required_even_for_an_event_first_sent_after_the_mark(self):
        # 1-3 went out after the mark on the old connection, and again on the
        # new one: the restarted bot must have it.
        people = dict(LEDGER_PEOPLE, u1=person(joins=1, hearts=5, paidHearts=5, chats=0))
        problems, _, _ = judge(people)
        self.assertTrue(any("person u1: chats 0 < 1" in p for p in problems), problems)
        people = dict(LEDGER_PEOPLE, u2=person(chats=1, donated=300, donations=1))
        problems, _, _ = judge(people)
        self.assertTrue(any("person u2: hearts 0 < 2" in p for p in problems), problems)

    def test_more_than_the_ledger_fails(self):
        people = dict(LEDGER_PEOPLE, u2=person(chats=2, donated=300, donations=1, hearts=2))
        problems, _, _ = judge(people)
        self.assertTrue(any("person u2: chats 2 > ledger 1" in p for p in problems), problems)
        people = dict(LEDGER_PEOPLE, u9=person(chats=1))
        problems, _, _ = judge(people)
        self.assertTrue(any("person u9: in the tally, never delivered" in p for p in problems), problems)

    def test_a_complete_person_shows_the_ledgers_nickname(self):
        people = dict(LEDGER_PEOPLE, u1=dict(LEDGER_PEOPLE["u1"], nickname="Mina"))
        problems, _, _ = judge(people)
        self.assertTrue(any("nickname 'Mina' != ledger None" in p for p in problems), problems)

    def test_the_dj_is_left_out(self):
        frames = FRAMES + [dict(frame(5, 0, "chat", "dj", "1-9"), isDj=True)]
        problems, _, _ = e2e.judge_tally(LEDGER, CLIENT, tally(dict(LEDGER_PEOPLE)), frames, RUNS)
        self.assertEqual(problems, [])

    def test_the_exact_comparison_of_the_host_judges_stays_exact(self):
        # scripts/e2e.d/host.py, host_replicas.py and bench_host.py hold the
        # clock while they stop a host: every frame delivered must be there.
        problems, truth = e2e.compare_tally(LEDGER, CLIENT, tally(dict(LEDGER_PEOPLE)))
        self.assertEqual((problems, len(truth)), ([], 1))
        people = dict(LEDGER_PEOPLE, u2=person(chats=1, hearts=2))
        problems, _ = e2e.compare_tally(LEDGER, CLIENT, tally(people))
        self.assertIn(f"broadcast {LIVE}: donated 0 != ledger 300", problems)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if result.wasSuccessful() else 1)
