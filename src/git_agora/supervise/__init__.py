"""Launched agents' processes: the state file of a launch (`state`), process groups (`groups`) and the
supervisor that starts the agents, enforces their budgets and ends them cleanly (`supervisor`).

`python -m git_agora.supervise DIR` runs the supervisor of the launch in DIR, detached from the
terminal; `git_agora.ops.launch` prepares a launch and starts it. Nothing here knows about Agora
projects: an agent is a command, a folder, a budget and two log files.
"""
