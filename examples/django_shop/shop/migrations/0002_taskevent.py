from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [
        migrations.CreateModel(
            name="TaskEvent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False)),
                ("result_id", models.CharField(max_length=64)),
                ("signal", models.CharField(max_length=20)),
                ("status", models.CharField(max_length=20)),
            ],
        ),
    ]
