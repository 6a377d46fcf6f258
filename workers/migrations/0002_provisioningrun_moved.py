"""ProvisioningRun now belongs to the provisioning app (same table): forget it here."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("workers", "0001_initial"), ("provisioning", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ProvisioningRun")],
            database_operations=[],
        ),
    ]
