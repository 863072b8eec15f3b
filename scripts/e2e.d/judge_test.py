#!/usr/bin/env python3
"""Tests of scripts/e2e.py's judge on made-up ledgers (standard library only):
frames written before a stop's mark are required, those after it on the
stopped bot's connection may be missing and are said, the restarted bot's
connection is required, and a tally above the ledger fails; every reply of
the reference kit names only people who did that thing before it, within its
kind's freshness.

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


# The replies check: a broadcast where Ana, 민지, Jörg, "Ana, Bo", Bo, a
# person without a nickname and one with a 50-letter one do things at known
# emulator times (a frame's id is `<ms>-<n>`).
T0 = 1_000_000
LONG = "Zephyrine" * 5 + "abcde"  # 50 UTF-16 units
REPLY_PEOPLE = {
    "u1": {"nickname": "Ana"}, "u2": {"nickname": "민지"}, "u3": {"nickname": "Jörg"},
    "u4": {"nickname": "Ana, Bo and Cy"}, "u5": {"nickname": "Bo"}, "u6": {"nickname": None},
    "u7": {"nickname": LONG}, "u8": {"nickname": "Cy"},
}


def event(ms, event, user, live=LIVE, n=0, **amounts):
    return dict(frame(ms // 10, 0, event, user, f"{ms}-{n}", **amounts), liveId=live)


REPLY_FRAMES = [
    event(T0, "presence", "u1"),
    event(T0 + 100, "presence", "u2"),
    event(T0 + 200, "chat", "u3"),
    event(T0 + 300, "presence", "u4"),
    event(T0 + 400, "presence", "u6"),
    event(T0 + 500, "presence", "u7"),
    event(T0 + 1_000, "donation", "u2", donated=600),
    event(T0 + 1_100, "like", "u1", hearts=60),
    event(T0 + 1_200, "like", "u3", hearts=50),   # 110 hearts
    event(T0 + 1_300, "donation", "u2", donated=500),  # 민지 has given 1100
    event(T0 + 1_400, "chat", "u8"),
    event(T0 + 50_000, "presence", "u5"),
    event(T0 + 2_000, "presence", "u5", live=LIVE + 1),  # Bo in another broadcast
]
REPLY_LEDGER = {"broadcasts": [
    {"liveId": LIVE, "bots": [{"clientId": CLIENT, "totals": {"people": REPLY_PEOPLE}}]},
    {"liveId": LIVE + 1, "bots": [{"clientId": CLIENT, "totals": {"people": {"u5": {"nickname": "Bo"}}}}]},
]}


def said(at, message, live=LIVE, client=CLIENT):
    return {"atMs": at, "liveId": live, "clientId": client, "message": message}


def replies(*chat, speed=1.0, jumps=(), optional_ids=frozenset()):
    return e2e.check_replies(list(chat), REPLY_FRAMES, REPLY_LEDGER, CLIENT, speed,
                             jumps=jumps, slack_ms=0, optional_ids=optional_ids)


class Replies(unittest.TestCase):
    def test_a_merged_welcome_of_people_who_arrived_passes_and_names_each(self):
        problems, out = replies(said(T0 + 2_000, "Welcome, Ana, 민지, Jörg and friend! 🎧"))
        self.assertEqual(problems, [])
        self.assertEqual([pid for pid, _, _ in out[0]["named"]], ["u1", "u2", "u3", "u6"])

    def test_a_nickname_holding_the_separators_is_matched_whole(self):
        # "Ana, Bo and Cy" arrived; Bo had not (not yet), Cy only chatted later.
        problems, out = replies(said(T0 + 2_000, "Welcome, 민지, Ana, Bo and Cy and Jörg! 🎧"))
        self.assertEqual(problems, [])
        self.assertEqual([n for _, n, _ in out[0]["named"]], ["민지", "Ana, Bo and Cy", "Jörg"])

    def test_naming_someone_who_had_not_arrived_fails_naming_the_message_and_the_person(self):
        problems, _ = replies(said(T0 + 2_000, "Welcome, Ana and Bo! 🎧"))
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("'Welcome, Ana and Bo! 🎧'", problems[0])
        self.assertIn("names 'Bo' (u5), who had not arrived in that broadcast before it", problems[0])

    def test_someone_of_another_broadcast_or_nobody_fails(self):
        problems, _ = replies(said(T0 + 2_500, "Welcome, Bo! 🎧", live=LIVE + 1))
        self.assertEqual(problems, [], "Bo arrived in that one")
        problems, _ = replies(said(T0 + 2_500, "Welcome, Zed! 🎧"))
        self.assertIn("names 'Zed': nobody of that broadcast is called that", problems[0])

    def test_a_welcome_after_its_freshness_fails_in_real_time(self):
        problems, out = replies(said(T0 + 61_000, "Welcome, Ana! 🎧"))
        self.assertIn("names 'Ana' (u1) 61.0 s after they arrived (freshness 60 s)", problems[0])
        self.assertTrue(out[0]["late"])
        # The emulator at speed 4: 200 emulator seconds are 50 real ones.
        problems, _ = replies(said(T0 + 200_000, "Welcome, Ana! 🎧"), speed=4)
        self.assertEqual(problems, [])
        # A clock jump of an hour is no time for the bot.
        problems, _ = replies(said(T0 + 3_610_000, "Welcome, Ana! 🎧"), jumps=[(T0 + 5_000, 3_600_000)])
        self.assertEqual(problems, [])

    def test_a_first_arrival_the_bot_may_have_missed_explains_a_late_welcome_only(self):
        # Bo's first join (written to a stopped bot) may be unread: the
        # second one greets. Not the other way round.
        frames = REPLY_FRAMES + [event(T0 + 120_000, "presence", "u5", n=1)]
        chat = [said(T0 + 130_000, "Welcome, Bo! 🎧")]
        problems, _ = e2e.check_replies(chat, frames, REPLY_LEDGER, CLIENT, 1.0, slack_ms=0)
        self.assertIn("names 'Bo' (u5) 80.0 s after they arrived", problems[0])
        problems, _ = e2e.check_replies(chat, frames, REPLY_LEDGER, CLIENT, 1.0, slack_ms=0,
                                        optional_ids={f"{T0 + 50_000}-0"})
        self.assertEqual(problems, [])

    def test_merged_names_may_be_cut_at_40_units_a_lone_name_at_the_message(self):
        cut = LONG[:39] + "…"
        problems, out = replies(said(T0 + 2_000, f"Welcome, Ana, {cut} and 민지! 🎧"))
        self.assertEqual(problems, [])
        self.assertEqual(out[0]["named"][1][0], "u7")
        problems, _ = replies(said(T0 + 2_000, f"Welcome, Ana and {LONG}! 🎧"))
        self.assertIn(f"longer than {e2e.MERGED_NAME_MAX} UTF-16 units in a merged reply", problems[0])
        problems, _ = replies(said(T0 + 2_000, f"Welcome, {LONG[:20]}…! 🎧"))
        self.assertEqual(problems, [])

    def test_thanks_name_donors_within_three_minutes(self):
        self.assertEqual(replies(said(T0 + 170_000, "Thank you, 민지!"))[0], [])
        problems, _ = replies(said(T0 + 2_000, "Thank you, 민지 and Ana!"))
        self.assertIn("names 'Ana' (u1), who had not donated in that broadcast before it", problems[0])
        problems, _ = replies(said(T0 + 190_000, "Thank you, 민지!"))
        self.assertIn("(freshness 180 s)", problems[0])

    def test_milestones_reached_before_and_said_within_two_minutes(self):
        ok = replies(said(T0 + 5_000, "100 hearts tonight! 💜"), said(T0 + 5_000, "민지 has given 1000 tonight!"))
        self.assertEqual(ok[0], [])
        problems, _ = replies(said(T0 + 5_000, "200 hearts tonight! 💜"))
        self.assertIn("the broadcast had not 200 hearts before it", problems[0])
        problems, _ = replies(said(T0 + 1_250, "민지 has given 1000 tonight!"))
        self.assertIn("'민지' (u2) had not given 1000 before it", problems[0])
        problems, _ = replies(said(T0 + 1_200 + 121_000, "100 hearts tonight! 💜"))
        self.assertIn("sent 121.0 s after 100 hearts were reached (freshness 120 s)", problems[0])

    def test_commands_answer_people_who_chatted_within_30_s(self):
        self.assertEqual(replies(said(T0 + 2_000, "Hello, Jörg!"))[0], [])
        problems, _ = replies(said(T0 + 2_000, "Hello, Ana!"))
        self.assertIn("names 'Ana' (u1), who had not chatted in that broadcast before it", problems[0])
        problems, _ = replies(said(T0 + 1_400 + 31_000, "Top donors: 1. 민지 1100"))
        self.assertIn("sent 31.0 s after the last chat (freshness 30 s)", problems[0])

    def test_top_lists_only_donors(self):
        self.assertEqual(replies(said(T0 + 2_000, "Top donors: 1. 민지 1100"))[0], [])
        self.assertEqual(replies(said(T0 + 2_000, "Top donors: No donations yet tonight."))[0], [])
        problems, _ = replies(said(T0 + 2_000, "Top donors: 1. 민지 1100 · 2. Ana 5"))
        self.assertIn("lists 'Ana' among the top donors, who had not donated", problems[0])

    def test_people_sharing_a_nickname_are_told_apart_by_what_they_did(self):
        people = dict(REPLY_PEOPLE, u9={"nickname": "Ana"})
        ledger = {"broadcasts": [{"liveId": LIVE, "bots": [{"clientId": CLIENT, "totals": {"people": people}}]}]}
        frames = REPLY_FRAMES + [event(T0 + 1_500, "presence", "u9"), event(T0 + 1_600, "donation", "u9", donated=1000)]
        chat = [said(T0 + 2_000, "Welcome, Ana! 🎧"), said(T0 + 2_100, "Welcome, Ana! 🎧"),
                said(T0 + 2_200, "Ana has given 1000 tonight!")]
        problems, out = e2e.check_replies(chat, frames, ledger, CLIENT, 1.0, slack_ms=0)
        self.assertEqual(problems, [])
        self.assertEqual([r["named"][0][0] for r in out], ["u1", "u9", "u9"])

    def test_other_messages_and_other_bots_are_left_alone(self):
        problems, out = replies(said(T0, "Requests are open: type !hello"),
                                said(T0, "Welcome, Zed! 🎧", client="other"))
        self.assertEqual((problems, out), ([], []))

    def test_clock_jumps_are_found_from_samples(self):
        samples = [(0.0, 0), (0.2, 800), (0.4, 3_601_600), (0.6, 3_602_400)]
        self.assertEqual(e2e.clock_jumps(samples, 4), [(800, 3_600_000)])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if result.wasSuccessful() else 1)
