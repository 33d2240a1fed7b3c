"""A typo in a tag or a metric name is caught before it is published for good: a name close to a known
one (reserved, declared in agora.toml, or already used; the project's metric or an output field) is
refused in one line with the suggestion, and `--new-tag` / `--new-metric` say it is meant. `log --tag`
that matches nothing suggests the closest tag."""

from __future__ import annotations

from pathlib import Path

from agora_testing import agora, git


def refused(clone: Path, *args: str, says: str) -> None:
    r = agora(clone, *args, check=False)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [f"git agora: error: {says}"], r


def titles(clone: Path) -> list[str]:
    return [e["title"] for e in agora(clone, "log", "--json").json()]


def test_a_tag_close_to_a_reserved_or_used_one_is_refused_with_the_suggestion_until_it_is_meant(project):
    before = titles(project)
    refused(
        project,
        "post",
        "-m",
        "the cache helps",
        "--tag",
        "insigth",
        says="unknown tag insigth: did you mean insight? --new-tag insigth to mean it; nothing published",
    )
    assert titles(project) == before  # nothing was published, locally or on the remote
    agora(project, "post", "-m", "ablating the cache", "--tag", "ablation")  # far from every known tag: new
    refused(
        project,
        "post",
        "-m",
        "another ablation",
        "--tag",
        "ablaton",  # close to a tag the project uses
        says="unknown tag ablaton: did you mean ablation? --new-tag ablaton to mean it; nothing published",
    )
    agora(project, "post", "-m", "the cache helps", "--new-tag", "insigth")
    (latest, *_) = agora(project, "log", "--json").json()
    assert latest["title"] == "the cache helps" and latest["tags"] == ["insigth"], latest
    agora(project, "post", "-m", "another one", "--tag", "insigth")  # used now: no longer a typo


def test_a_tag_declared_in_agora_toml_is_known_and_its_neighbour_is_refused(tmp_path, remote):
    from agora_testing import make_clone

    a = make_clone(tmp_path, "a", str(remote), "alice")
    (a / "agora.toml").write_text('[project]\nname = "p"\n\n[metric]\nname = "bpc"\n\n[tags]\nablation = 0.0\n')
    agora(a, "init")
    agora(a, "post", "-m", "a declared tag", "--tag", "ablation")
    refused(
        a,
        "post",
        "-m",
        "x",
        "--tag",
        "ablatoin",
        says="unknown tag ablatoin: did you mean ablation? --new-tag ablatoin to mean it; nothing published",
    )


def test_a_metric_close_to_the_projects_metric_is_refused_and_a_result_without_it_gets_a_notice(project):
    refused(
        project,
        "post",
        "-m",
        "a cheaper model",
        "--tag",
        "insight",
        "--metric",
        "bcp=2.0",
        says="unknown metric bcp: did you mean bpc (the project's metric)? --new-metric bcp to mean it; "
        "nothing published",
    )
    (project / "model.py").write_text("order = 4\n")
    refused(
        project,
        "push",
        "-m",
        "order 4",
        "--tag",
        "result",
        "--metric",
        "bcp=2.0",
        says="unknown metric bcp: did you mean bpc (the project's metric)? --new-metric bcp to mean it; "
        "nothing published",
    )
    assert git(project, "status", "--porcelain").strip() == "M model.py"  # the work tree is as it was
    agora(project, "post", "-m", "bits per byte", "--tag", "insight", "--metric", "bpb=2.0", "--new-metric", "bpb")
    said = agora(project, "push", "-m", "order 4", "--tag", "result").stderr
    assert "this result carries no bpc (the project's metric)" in said, said
    assert "carries no" not in agora(project, "post", "-m", "x", "--tag", "result", "--metric", "bpc=2").stderr


def test_log_tag_that_matches_nothing_suggests_the_closest_tag(project):
    agora(project, "post", "-m", "an insight", "--tag", "insight")
    assert agora(project, "log", "--tag", "insigth").stdout == "no contributions match; did you mean --tag insight?\n"
    assert agora(project, "log", "--tag", "zzzzzzzz").stdout == "no contributions match\n"
