"""Provisioning worker machines with the Ansible playbooks in playbooks/.

`runner` runs a playbook through ansible-runner and keeps its record (`models`),
`recorder` turns its events into a log and an outcome, `hosts` checks what an operator
asks for, `inventory` puts Ansible's hosts next to live workers, `bundle` packs the code
for the hosts, `nodectl` runs on a host to wait for or drain its worker, and `views` is the
staff page that does the same from a browser (`manage.py workers` from a shell).
"""
