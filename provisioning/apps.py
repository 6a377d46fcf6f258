from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    """Adding and removing worker machines with Ansible, run through ansible-runner."""

    name = "provisioning"
