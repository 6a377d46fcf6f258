"""Provisioning worker machines with the Ansible playbooks in playbooks/.

`runner` runs a playbook through ansible-runner and keeps its record, `recorder` turns
its events into a log and an outcome, `hosts` checks what an operator asks for,
`inventory` puts Ansible's hosts next to live workers, `bundle` packs the code for the
hosts, and `nodectl` runs on a host to wait for or drain its worker.
"""
