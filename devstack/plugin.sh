#!/bin/bash
#
# devstack plugin of hpc-nova-scheduler.
#
# It does, in the same order and with the same options, what
# tools/cloud.py does on a machine without devstack (see
# doc/source/contributor/control-plane.rst): install the plugin next to
# nova-scheduler, point nova.conf at its filters and weighers, run several
# scheduler workers, create the plugin database, sync it and load profiles,
# and run hpc-scheduler-agent (the sweep, the fallback copy, the
# fair-share allocator and its reclaims) next to nova-scheduler, with the
# same nova.conf and, when HPC_FAIRSHARE_RECLAIM is not off, a Keystone
# user of its own for Nova's API.
# Racks and processor groups are host aggregates with hpc:rack and
# hpc:cpu_group metadata, which the operator sets as for any cloud.

function install_hpc_nova_scheduler {
    setup_develop "$HPC_NOVA_SCHEDULER_DIR"
}

# The plugin database's URL: with the plugin's own account on MySQL, as
# tools/cloud.py does, so that the account can be locked or audited alone.
function hpc_nova_scheduler_db_url {
    if [[ "$DATABASE_TYPE" == "mysql" ]]; then
        local account="$HPC_DATABASE_USER:$HPC_DATABASE_PASSWORD"
        local db="$HPC_NOVA_SCHEDULER_DB"
        echo "mysql+pymysql://$account@$DATABASE_HOST/$db?charset=utf8mb4"
    else
        database_connection_url "$HPC_NOVA_SCHEDULER_DB"
    fi
}

function configure_hpc_nova_scheduler {
    local filters
    filters="ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter"
    filters+=",ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter"
    filters+=",HpcPlacementFilter"
    iniset "$NOVA_CONF" filter_scheduler available_filters \
        nova.scheduler.filters.all_filters
    iniadd "$NOVA_CONF" filter_scheduler available_filters \
        hpc_nova_scheduler.scheduler.filters.all_filters
    local weighers
    weighers="nova.scheduler.weights.all_weighers"
    weighers+=",hpc_nova_scheduler.scheduler.weights.all_weighers"
    iniset "$NOVA_CONF" filter_scheduler weight_classes "$weighers"
    iniset "$NOVA_CONF" filter_scheduler enabled_filters "$filters"
    iniset "$NOVA_CONF" scheduler workers "$HPC_SCHEDULER_WORKERS"
    iniset "$NOVA_CONF" scheduler max_attempts 3
    iniset "$NOVA_CONF" hpc_scheduler connection "$(hpc_nova_scheduler_db_url)"
    iniset "$NOVA_CONF" hpc_scheduler database_failure_policy \
        "$HPC_DATABASE_FAILURE_POLICY"
    iniset "$NOVA_CONF" hpc_scheduler cache_threshold "$HPC_CACHE_THRESHOLD"
    iniset "$NOVA_CONF" hpc_scheduler sync_cache_threshold \
        "$HPC_SYNC_CACHE_THRESHOLD"
    iniset "$NOVA_CONF" hpc_scheduler interference_tolerance \
        "$HPC_INTERFERENCE_TOLERANCE"
    if [[ "$HPC_FAIRSHARE_RECLAIM" != "off" ]]; then
        iniset "$NOVA_CONF" hpc_scheduler fairshare_reclaim \
            "$HPC_FAIRSHARE_RECLAIM"
        iniset "$NOVA_CONF" hpc_scheduler fairshare_reclaim_grace \
            "$HPC_FAIRSHARE_RECLAIM_GRACE"
        configure_hpc_scheduler_agent_credentials
    fi
}

# Reclaim acts through Nova's API with the agent's own service user (an
# admin of the service project), never with nova's.
function configure_hpc_scheduler_agent_credentials {
    local user="$HPC_AGENT_USER"
    get_or_create_user "$user" "$SERVICE_PASSWORD" default
    get_or_add_user_project_role admin "$user" "$SERVICE_PROJECT_NAME"
    local group=hpc_scheduler_agent
    iniset "$NOVA_CONF" $group auth_type password
    iniset "$NOVA_CONF" $group auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$NOVA_CONF" $group username "$user"
    iniset "$NOVA_CONF" $group password "$SERVICE_PASSWORD"
    iniset "$NOVA_CONF" $group project_name "$SERVICE_PROJECT_NAME"
    iniset "$NOVA_CONF" $group user_domain_name Default
    iniset "$NOVA_CONF" $group project_domain_name Default
    iniset "$NOVA_CONF" $group region_name "$REGION_NAME"
}

function init_hpc_nova_scheduler {
    recreate_database "$HPC_NOVA_SCHEDULER_DB"
    if [[ "$DATABASE_TYPE" == "mysql" ]]; then
        local user="'$HPC_DATABASE_USER'@'%'"
        local grant="GRANT ALL PRIVILEGES"
        grant+=" ON \`$HPC_NOVA_SCHEDULER_DB\`.* TO $user"
        local create="CREATE USER IF NOT EXISTS $user"
        create+=" IDENTIFIED BY '$HPC_DATABASE_PASSWORD'"
        mysql -u"$DATABASE_USER" -p"$DATABASE_PASSWORD" -h"$MYSQL_HOST" \
            -e "$create; $grant"
    fi
    hpc-nova-scheduler --config-file "$NOVA_CONF" db sync
    if [[ -n "$HPC_PROFILES" ]]; then
        hpc-nova-scheduler --config-file "$NOVA_CONF" \
            profile import "$HPC_PROFILES"
    fi
}

# The agent runs on the scheduler's host with its nova.conf: it keeps the
# scheduler workers' fallback copy (in Nova's state_path) ready.
function start_hpc_scheduler_agent {
    local bin
    bin="$(get_python_exec_prefix)/hpc-scheduler-agent"
    run_process hpc-scheduler-agent "$bin --config-file $NOVA_CONF"
}

function stop_hpc_scheduler_agent {
    stop_process hpc-scheduler-agent
}

# The collector runs on each compute host (as root: it makes resctrl
# monitoring groups), with that host's nova.conf and the plugin database.
function start_hpc_scheduler_collector {
    local bin command
    bin="$(get_python_exec_prefix)/hpc-scheduler-collector"
    command="$bin --config-file $NOVA_CONF"
    run_process hpc-scheduler-collector "$command" root root
}

function stop_hpc_scheduler_collector {
    stop_process hpc-scheduler-collector
}

if is_service_enabled hpc-nova-scheduler; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing hpc-nova-scheduler"
        install_hpc_nova_scheduler
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring hpc-nova-scheduler"
        configure_hpc_nova_scheduler
        init_hpc_nova_scheduler
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        if is_service_enabled hpc-scheduler-agent; then
            echo_summary "Starting hpc-scheduler-agent"
            start_hpc_scheduler_agent
        fi
        if is_service_enabled hpc-scheduler-collector; then
            echo_summary "Starting hpc-scheduler-collector"
            start_hpc_scheduler_collector
        fi
    fi
    if [[ "$1" == "unstack" ]]; then
        if is_service_enabled hpc-scheduler-agent; then
            stop_hpc_scheduler_agent
        fi
        if is_service_enabled hpc-scheduler-collector; then
            stop_hpc_scheduler_collector
        fi
    fi
    if [[ "$1" == "clean" ]]; then
        # The database goes with devstack's own; nothing else is left behind.
        :
    fi
fi
