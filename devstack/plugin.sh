#!/bin/bash
# devstack plugin for hpc-nova-scheduler.
#
# Enable with, in local.conf:
#   enable_plugin hpc-nova-scheduler <git URL of this repository>
# It installs the package next to Nova, adds the plugin's filters and
# weighers to nova.conf, points [hpc_scheduler] connection at a database of
# its own on devstack's database server and creates the tables.

HPC_NOVA_SCHEDULER_DIR=${HPC_NOVA_SCHEDULER_DIR:-$DEST/hpc-nova-scheduler}
HPC_NOVA_SCHEDULER_DB=${HPC_NOVA_SCHEDULER_DB:-hpc_scheduler}

function install_hpc_nova_scheduler {
    setup_develop "$HPC_NOVA_SCHEDULER_DIR"
}

function configure_hpc_nova_scheduler {
    iniadd "$NOVA_CONF" filter_scheduler available_filters \
        hpc_nova_scheduler.scheduler.filters.all_filters
    # The plugin's filter goes last: it plans over the hosts the others accept.
    local filters
    filters=$(iniget "$NOVA_CONF" filter_scheduler enabled_filters)
    filters=${filters:-ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter}
    iniset "$NOVA_CONF" filter_scheduler enabled_filters "$filters,HpcPlacementFilter"
    local weighers
    weighers=$(iniget "$NOVA_CONF" filter_scheduler weight_classes)
    weighers=${weighers:-nova.scheduler.weights.all_weighers}
    iniset "$NOVA_CONF" filter_scheduler weight_classes \
        "$weighers,hpc_nova_scheduler.scheduler.weights.all_weighers"
    iniset "$NOVA_CONF" hpc_scheduler connection \
        "$(database_connection_url "$HPC_NOVA_SCHEDULER_DB")"
}

function init_hpc_nova_scheduler {
    recreate_database "$HPC_NOVA_SCHEDULER_DB"
    hpc-nova-scheduler --config-file "$NOVA_CONF" db sync
    hpc-nova-scheduler --config-file "$NOVA_CONF" profile import \
        "$HPC_NOVA_SCHEDULER_DIR/etc/profiles/seed-applications.yaml"
    hpc-nova-scheduler --config-file "$NOVA_CONF" interference import \
        "$HPC_NOVA_SCHEDULER_DIR/etc/profiles/seed-applications.yaml"
}

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    install_hpc_nova_scheduler
elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    configure_hpc_nova_scheduler
elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    init_hpc_nova_scheduler
fi
