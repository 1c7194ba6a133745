"""Alembic environment: runs against the engine handed in by quota_service.db."""

from alembic import context

from quota_service.core.models import Base
from quota_service.core import chatmodels  # noqa: F401 - its tables are on Base
from quota_service.core import foldermodels  # noqa: F401 - its tables are on Base
from quota_service.core import servingmodels  # noqa: F401 - its tables are on Base
from quota_service.core import storemodels  # noqa: F401 - its tables are on Base
from quota_service.core import usagemodels  # noqa: F401 - its tables are on Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine = config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("hubgrid migrations run online only")
run_migrations_online()
