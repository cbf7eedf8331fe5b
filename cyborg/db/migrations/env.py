"""alembic environment: runs migrations on the engine cyborg hands in."""

from alembic import context

from cyborg.db import models

target_metadata = models.Base.metadata


def run_migrations_online():
    engine = context.config.attributes['engine']
    with engine.connect() as connection:
        context.configure(connection=connection,
                          target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
