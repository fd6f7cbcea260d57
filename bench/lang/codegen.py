"""A parsed script into probe programs: plan, group, then one program per group.

compile_script() matches every clause's probes (probes.py) and plans them
as `run` would (bench/trace/sites.py), groups the probes by the clauses
they run — each group is one program in one slot, its clauses in script
order, this->x its locals, shared by its clauses as DTrace's are; a clause
whose predicate probefunc/probename decide false at a probe does not run
there, and a probe no clause runs at is not armed — numbers
the script's globals and thread-locals, and has each group's program
written (statements.py, on expr.py's expressions) and assembled by
bench/program/asm.py, which checks it against wire.h's limits (a program
it refuses is an error at the first clause's probe). A program sends one
LOG record per firing, holding each printf or trace() that ran; exit()
sets a global every program checks first. BEGIN and END run on the host
(hosted.py). A profile-N/tick-N clause's probe is a SampleProbe
(probes.py) grouped as the planned probes are; the guest has one
sampling timer, so a script has one such probe. What the output needs
travels in Compiled (model.py): each
aggregation's kind, keys and lquantize range, each printf's format and
arguments.
"""

from __future__ import annotations

import re

from ..trace import sites
from . import probes as probes_mod
from .expr import probe_truth
from .hosted import globals_read, host_clause
from .model import (AggInfo, BUILTINS, Compiled, GLOBALS, Group, SLOTS, Scope, TLS)
from .parser import Action, Assign, Member, Name, Script
from .statements import Gen


def compile_script(script: Script, image, arch, mechanism: str) -> Compiled:
    descs = {id(c): [probes_mod.describe(script, t, arch) for t in c.probes]
             for c in script.clauses}
    for c in script.clauses:
        for d in descs[id(c)]:
            probes_mod.check_matches(script, d, image)
    hosted = [c for c in script.clauses
              if all(d.provider in probes_mod.SPECIAL for d in descs[id(c)])]
    for c in script.clauses:
        kinds = {d.provider in probes_mod.SPECIAL for d in descs[id(c)]}
        if len(kinds) > 1:
            raise script.error(c.pos, "BEGIN and END run on the host: give them a "
                               "clause of their own")
    traced = [c for c in script.clauses if c not in hosted]
    sampler = _sampler(script, traced, descs)
    spec = ",".join(dict.fromkeys(d.spec for c in traced for d in descs[id(c)]))
    planned: list = []
    if traced:
        try:
            planned, _ = sites.plan(spec, image, mechanism)
        except sites.SpecError as e:
            raise script.error(traced[0].pos, str(e)) from None
    if sampler is not None:
        planned.append(sampler)
    by_set = _by_clauses(planned, traced, descs, image)
    armed = [p for ps in by_set.values() for p in ps]
    if 0 < len(armed) < len(planned):
        # Probes whose every clause's predicate is false there (probefunc,
        # probename) are not armed at all: plan the rest alone.
        spec = ",".join(dict.fromkeys(p.spec for p in planned
                                      if p in armed and p is not sampler))
        planned = sites.plan(spec, image, mechanism)[0] if spec else []
        if sampler is not None and sampler in armed:
            planned.append(sampler)
        by_set = _by_clauses(planned, traced, descs, image)
    if len(by_set) > SLOTS:
        raise script.error(traced[0].pos, f"a program past the VM's limits: the "
                           f"probes need {len(by_set)} different programs, the guest "
                           f"has {SLOTS} slots")
    for c in traced:
        if not any(c.index in k for k in by_set) and any(
                probe_truth(c.predicate, p) is False for p in planned
                if any(d.matches(p, image) for d in descs[id(c)])):
            raise script.error(c.predicate.pos, "the predicate is false at every "
                               "probe of this clause (probefunc and probename decide "
                               "it here): it would never run")
        if not any(c.index in k for k in by_set):
            raise script.error(c.pos, "no probe of this clause can be placed "
                               "(the guest's rules refuse every site it matches)")
    scope = Scope()
    _declare(script, scope)
    aggs: dict[str, AggInfo] = {}
    uses_exit = any(isinstance(s, Action) and s.name == "exit"
                    for c in traced for s in c.body)
    groups = []
    for slot, (key, ps) in enumerate(sorted(by_set.items())):
        g = Group(slot, [script.clauses[i] for i in key], ps)
        Gen(script, g, scope, aggs, image, arch, uses_exit).run()
        groups.append(g)
    begin, end = [], []
    for c in hosted:
        acts = host_clause(script, c, aggs, scope)
        (begin if descs[id(c)][0].provider == "BEGIN" else end).extend(acts)
    return Compiled(spec, [p for ps in by_set.values() for p in ps if p is not sampler],
                    groups, aggs, begin, end, uses_exit, scope=scope,
                    host_globals=globals_read(begin + end, scope), sampler=sampler)


def _by_clauses(planned, traced, descs, image) -> dict[tuple, list]:
    """Probes by the clauses that run at them: a clause runs at a probe its
    descriptions match unless its predicate is decided false there."""
    by_set: dict[tuple, list] = {}
    for p in planned:
        mine = tuple(c.index for c in traced
                     if any(d.matches(p, image) for d in descs[id(c)])
                     and probe_truth(c.predicate, p) is not False)
        if mine:
            by_set.setdefault(mine, []).append(p)
    return by_set


def _sampler(script: Script, traced: list, descs: dict):
    """The script's one sampling probe (probes.SampleProbe), or None; an
    error for two different ones, or one that shares its clause."""
    found = {}
    for c in traced:
        kinds = {d.provider == "profile" for d in descs[id(c)]}
        if len(kinds) > 1:
            raise script.error(c.pos, "a profile/tick probe runs in the timer "
                               "interrupt, not at a site: give it a clause of its own")
        for d in descs[id(c)]:
            if d.provider == "profile":
                found.setdefault(d.spec, d)
    if len(found) > 1:
        second = list(found.values())[1]
        raise script.error(second.pos, "one sampling probe (profile-N or tick-N) per "
                           "script: the guest has one sampling timer")
    if not found:
        return None
    return next(iter(found.values())).sampler


def _declare(script: Script, scope: Scope) -> None:
    """Globals and thread-locals, numbered by first assignment."""
    for c in script.clauses:
        for s in c.body:
            if not isinstance(s, Assign):
                continue
            t = s.target
            if isinstance(t, Name):
                if t.name in BUILTINS or re.fullmatch(r"arg\d+", t.name) or \
                        t.name == "args":
                    raise script.error(t.pos, f"{t.name} cannot be assigned")
                if t.name not in scope.globals:
                    if len(scope.globals) >= GLOBALS - 1:
                        raise script.error(t.pos, f"a program past the VM's limits: "
                                           f"more than {GLOBALS - 1} globals")
                    scope.globals[t.name] = len(scope.globals)
            elif isinstance(t, Member) and t.scope == "self" and t.name not in scope.tls:
                if len(scope.tls) >= TLS:
                    raise script.error(t.pos, f"a program past the VM's limits: "
                                       f"more than {TLS} thread-local variables")
                scope.tls[t.name] = len(scope.tls)
