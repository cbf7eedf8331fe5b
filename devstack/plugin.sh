#!/bin/bash
#
# devstack plugin for cyborg. Enable it in local.conf with
#
#     enable_plugin cyborg <git url of cyborg> [branch]
#
# It needs the services key (Keystone), placement and, for the boot flow,
# Nova. See devstack/README.rst.

# Save trace setting
_XTRACE_CYBORG_PLUGIN=$(set +o | grep xtrace)
set -o xtrace

source $CYBORG_DIR/devstack/lib/cyborg

if is_service_enabled cyborg; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing cyborg"
        install_cyborg

    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring cyborg"
        configure_cyborg
        if is_service_enabled key; then
            create_cyborg_accounts
        fi
        init_cyborg
        if [[ "$CYBORG_CONFIGURE_NOVA" == "True" ]] && is_service_enabled nova; then
            configure_nova_for_cyborg
        fi

    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting cyborg"
        start_cyborg

    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        if is_service_enabled tempest; then
            configure_tempest_for_cyborg
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_cyborg
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_cyborg
    fi
fi

# Restore xtrace
$_XTRACE_CYBORG_PLUGIN
